"""The samplers over many trials: Gaussian-process fits (seconds each), a bayes sweep resumed on
disk, and what a fresh Python imports. The quick checks are in tests/unit/search/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.samplers import GPSampler

from polyaxon_prefect.search._kinds import build_sampler
from polyaxon_prefect.search._optuna._study import SweepStudy
from polyaxon_prefect.search._samplers import GaussianProcessSampler, optuna_space
from tests.unit.search._matrices import matrix
from tests.unit.search.test_samplers import BAYES, METRIC, PARAMS, _bayes, _objective, _run

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


def _drawn_by_the_model(sampler: Any, trials: int) -> list[bool]:
    """For each of ``trials`` trials of the BAYES matrix in turn: whether ``sampler`` draws it from
    its model (a relative sample) rather than at random."""
    space = optuna_space(matrix(BAYES).hp_params())
    distributions = {name: dim.distribution for name, dim in space.items()}
    study = optuna.create_study(sampler=sampler)
    drawn = []
    for _ in range(trials):
        trial = study.ask(distributions)
        frozen = study.trials[-1]
        relative = sampler.sample_relative(
            study, frozen, sampler.infer_relative_search_space(study, frozen)
        )
        drawn.append(relative != {})
        study.tell(trial, _objective({n: space[n].decode(v) for n, v in trial.params.items()}))
    return drawn


def _suggestions(sampler: Any, trials: int) -> list[dict[str, Any]]:
    space = optuna_space(matrix(BAYES).hp_params())
    return [trial.params for trial in _run(sampler, space, trials).trials]


def test_bayes_without_utility_function_is_optunas_gp_sampler() -> None:
    sampler, notes = _bayes()
    assert isinstance(sampler, GPSampler)
    assert (sampler.n_startup, sampler.deterministic) == (2, True)
    assert any("GPSampler" in n and "log-EI" in n for n in notes)
    noisy, _ = _bayes(deterministic=False)
    assert isinstance(noisy, GPSampler) and noisy.deterministic is False
    # numInitialRuns: 2 random trials, then the Gaussian process
    assert _drawn_by_the_model(sampler, 4) == [False, False, True, True]


def test_ei_without_eps_and_a_matern_5_2_kernel_stay_on_gp_sampler() -> None:
    utility = {
        "acquisitionFunction": "ei",
        "eps": 0.0,
        "numWarmup": 500,
        "numIterations": 4,
        "gaussianProcess": {"kernel": "matern", "nu": 2.5},
    }
    sampler, notes = _bayes(utility)
    assert isinstance(sampler, GPSampler)
    assert (sampler.num_warmup, sampler.num_iterations) == (500, 4)
    assert notes == []
    # they reach GPSampler's search of the acquisition: with GPSampler's own numbers (2048
    # random points, 10 local searches) it suggests what it suggests without a utilityFunction
    own, _ = _bayes({**utility, "numWarmup": 2048, "numIterations": 10})
    default, _ = _bayes()
    assert _suggestions(own, 3) == _suggestions(default, 3)
    assert _suggestions(sampler, 3)[2] != _suggestions(default, 3)[2]


@pytest.mark.process
def test_torch_is_imported_only_when_a_bayes_study_is_built() -> None:
    script = f"""
import sys
from polyaxon_prefect.search._optuna._study import SweepStudy
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


@pytest.mark.parametrize(
    "utility",
    [
        {"acquisitionFunction": "ucb", "kappa": 1.5},
        {"acquisitionFunction": "poi", "eps": 0.1},
        {"acquisitionFunction": "ei", "eps": 0.2},
        {"acquisitionFunction": "ei", "eps": 0.0, "gaussianProcess": {"kernel": "matern"}},
        {"acquisitionFunction": "ei", "eps": 0.0, "gaussianProcess": {"kernel": "rbf"}},
        {
            "acquisitionFunction": "ei",
            "eps": 0.0,
            "gaussianProcess": {"nu": 2.5, "lengthScale": 0.2, "numRestartsOptimizer": 3},
        },
        {"acquisitionFunction": "ucb", "kappa": 1.2, "gaussianProcess": {"nu": 1.9}},
    ],
    ids=["ucb", "poi", "ei-eps", "matern-1.5", "rbf", "length-scale-restarts", "nu-1.9"],
)
def test_settings_gp_sampler_cannot_honour_are_approximated_by_it(utility: dict) -> None:
    sampler, notes = _bayes({"numWarmup": 300, "numIterations": 3, **utility})
    assert isinstance(sampler, GPSampler)
    assert (sampler.num_warmup, sampler.num_iterations) == (300, 3)
    assert sampler.n_startup == 2
    assert notes == []  # loading warns about it (tests/unit/loading/test_matrix_warnings.py)
