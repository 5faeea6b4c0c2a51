"""The samplers over many trials: Gaussian-process fits (seconds each), a bayes sweep resumed on
disk, and what a fresh Python imports. The quick checks are in tests/unit/search/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.search._samplers import (
    GaussianProcessSampler,
    build_sampler,
    optuna_space,
)
from polyaxon_prefect.search._study import SweepStudy
from tests.unit.search._matrices import matrix
from tests.unit.search.test_samplers import BAYES, METRIC, PARAMS, _run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "bayes", "numInitialRuns": 3, "maxIterations": 3, "metric": METRIC},
        {"kind": "hyperopt", "algorithm": "tpe", "numRuns": 6, "metric": METRIC},
        {"kind": "hyperopt", "algorithm": "rand", "numRuns": 6, "metric": METRIC},
        {"kind": "hyperopt", "algorithm": "anneal", "numRuns": 6, "metric": METRIC},
    ],
    ids=["bayes", "tpe", "rand", "anneal"],
)
def test_each_sampler_builds_and_is_reproducible_from_its_seed(data: dict) -> None:
    m = matrix({**data, "params": PARAMS})
    space = optuna_space(m.hp_params())
    runs = []
    for _ in range(2):
        sampler, _warnings = build_sampler(m, space, seed=5)
        runs.append([t.params for t in _run(sampler, space, 6).trials])
    assert runs[0] == runs[1]
    other, _ = build_sampler(m, space, seed=6)
    assert [t.params for t in _run(other, space, 6).trials] != runs[0]


@pytest.mark.process
def test_torch_is_imported_only_when_a_bayes_study_is_built() -> None:
    script = f"""
import sys
from polyaxon_prefect.search._study import SweepStudy
from tests.unit.search._matrices import matrix
tpe = {{"kind": "hyperopt", "algorithm": "tpe", "numRuns": 2, "metric": {METRIC!r},
       "params": {PARAMS!r}}}
SweepStudy.open(matrix(tpe), study_name="tpe", storage=":memory:")
assert "torch" not in sys.modules
SweepStudy.open(matrix({BAYES!r}), study_name="bayes", storage=":memory:")
assert "torch" in sys.modules
"""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_bayes_sweep_on_gp_sampler_converges_in_parallel_and_resumes(tmp_path: Path) -> None:
    data = {
        "kind": "bayes",
        "numInitialRuns": 4,
        "maxIterations": 8,
        "seed": 3,
        "metric": METRIC,
        "params": {"x": {"kind": "uniform", "value": [-4, 4]}},
    }
    import torch

    threads = torch.get_num_threads()
    url = str(tmp_path / "bayes.db")
    study = SweepStudy.open(matrix(data), study_name="bo", storage=url)
    values = []
    while True:
        pair = [s for s in (study.ask(), study.ask()) if s is not None]  # two trials in flight
        if not pair:
            break
        if len(pair) == 2:
            assert pair[0].params != pair[1].params
        for suggestion in pair:
            values.append((suggestion.params["x"] - 1.3) ** 2)
            study.tell(suggestion.number, status="succeeded", value=values[-1])
        if len(values) == 10:
            crashed = study.ask()
            break
    resumed = SweepStudy.open(matrix(data), study_name="bo", storage=url, resume=True)
    assert resumed.recover() == [crashed.index]
    retry = resumed.ask()
    assert (retry.index, retry.params) == (crashed.index, crashed.params)
    resumed.tell(retry.number, status="succeeded", value=(retry.params["x"] - 1.3) ** 2)
    last = resumed.ask()
    resumed.tell(last.number, status="succeeded", value=(last.params["x"] - 1.3) ** 2)
    assert resumed.ask() is None and resumed.is_finished()
    assert [r.index for r in resumed.history()] == list(range(12))
    assert resumed.best().value < 1e-2
    assert torch.get_num_threads() == threads  # one thread only while suggesting


def test_gaussian_process_finds_a_smooth_minimum() -> None:
    space = optuna_space(
        matrix(
            {
                "kind": "bayes",
                "numInitialRuns": 5,
                "maxIterations": 10,
                "metric": METRIC,
                "params": {"x": {"kind": "uniform", "value": [-4, 4]}},
            }
        ).hp_params()
    )
    sampler = GaussianProcessSampler({"x": space["x"].distribution}, seed=0, n_startup=5)
    study = _run(sampler, space, 15, lambda p: (p["x"] - 1.3) ** 2)
    assert study.best_value < 1e-3
