from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.samplers import GPSampler

from polyaxon_prefect.search._samplers import (
    AnnealSampler,
    GaussianProcessSampler,
    build_sampler,
    optuna_space,
)
from polyaxon_prefect.search._study import SweepStudy

from ._matrices import matrix

METRIC = {"name": "loss", "optimization": "minimize"}
PARAMS = {
    "x": {"kind": "uniform", "value": [-3, 3]},
    "c": {"kind": "choice", "value": ["a", "b", "c"]},
    "n": {"kind": "range", "value": [1, 6, 1]},
}


def _objective(p: dict) -> float:
    return (p["x"] - 1) ** 2 + (p["c"] != "b") + abs(p["n"] - 3)


def _run(sampler, space, trials: int, objective=_objective) -> optuna.Study:
    study = optuna.create_study(sampler=sampler)
    for _ in range(trials):
        trial = study.ask({name: dim.distribution for name, dim in space.items()})
        params = {name: dim.decode(trial.params[name]) for name, dim in space.items()}
        study.tell(trial, objective(params))
    return study


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


def test_tpe_arguments_are_explicit() -> None:
    m = matrix(
        {"kind": "hyperopt", "algorithm": "tpe", "numRuns": 6, "metric": METRIC, "params": PARAMS}
    )
    sampler, _ = build_sampler(m, optuna_space(m.hp_params()), seed=1)
    assert sampler._multivariate is True and sampler._constant_liar is True


BAYES = {
    "kind": "bayes",
    "numInitialRuns": 2,
    "maxIterations": 2,
    "metric": METRIC,
    "params": PARAMS,
}


def _bayes(utility: dict | None = None, **kwargs: Any) -> tuple[Any, list[str]]:
    data = dict(BAYES) if utility is None else {**BAYES, "utilityFunction": utility}
    m = matrix(data)
    with warnings.catch_warnings():
        # the experimental GPSampler arguments are set on purpose and must not leak out
        warnings.simplefilter("error", ExperimentalWarning)
        return build_sampler(m, optuna_space(m.hp_params()), seed=1, **kwargs)


def test_bayes_without_utility_function_is_optunas_gp_sampler() -> None:
    sampler, notes = _bayes()
    assert isinstance(sampler, GPSampler)
    assert sampler._n_startup_trials == 2 and sampler._deterministic is True
    assert any("GPSampler" in n and "log-EI" in n for n in notes)
    noisy, _ = _bayes(deterministic=False)
    assert isinstance(noisy, GPSampler) and noisy._deterministic is False


def test_ei_without_eps_and_a_matern_5_2_kernel_stay_on_gp_sampler() -> None:
    sampler, notes = _bayes(
        {
            "acquisitionFunction": "ei",
            "eps": 0.0,
            "numWarmup": 500,
            "numIterations": 4,
            "gaussianProcess": {"kernel": "matern", "nu": 2.5},
        }
    )
    assert isinstance(sampler, GPSampler)
    assert (sampler._n_preliminary_samples, sampler._n_local_search) == (500, 4)
    assert notes == []


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
    assert (sampler._n_preliminary_samples, sampler._n_local_search) == (300, 3)
    assert sampler._n_startup_trials == 2
    assert notes == []  # loading warns about it (tests/unit/loading/test_matrix_warnings.py)


def test_without_torch_bayes_falls_back_to_the_numpy_process_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    sampler, notes = _bayes()
    assert isinstance(sampler, GaussianProcessSampler) and sampler.n_startup == 2
    assert any("needs torch" in n and "numpy Gaussian process instead" in n for n in notes)
    study = SweepStudy.open(matrix(BAYES), study_name=f"no-torch-{id(notes)}", storage=":memory:")
    assert any("needs torch" in n for n in study.warnings)
    # a utilityFunction gets the same process (loading warns about what it approximates)
    ucb, notes = _bayes(
        {"acquisitionFunction": "ucb", "kappa": 2.0, "numWarmup": 300, "numIterations": 3}
    )
    assert isinstance(ucb, GaussianProcessSampler)
    assert (ucb.num_warmup, ucb.num_iterations) == (300, 3)
    assert any("needs torch" in n for n in notes)


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


def test_space_maps_polyaxon_laws() -> None:
    m = matrix(
        {
            "kind": "hyperopt",
            "algorithm": "rand",
            "numRuns": 5,
            "metric": METRIC,
            "params": {
                "lu": {"kind": "loguniform", "value": [0, 2]},
                "qu": {"kind": "quniform", "value": [0, 1, 0.25]},
                "nn": {"kind": "normal", "value": [10, 2]},
                "ls": {"kind": "logspace", "value": "0:2:3"},
            },
        }
    )
    space = optuna_space(m.hp_params())
    assert space["lu"].distribution == FloatDistribution(1.0, math.exp(2), log=True)
    assert space["qu"].decode(0.99) == 0.75
    assert space["nn"].decode(0.5) == 10.0
    assert abs(space["nn"].decode(0.8413447460685429) - 12.0) < 1e-9
    assert space["ls"].distribution == CategoricalDistribution((1.0, 10.0, 100.0))


def _quadratic(p: dict) -> float:
    return sum((p[f"x{i}"] - 0.3) ** 2 for i in range(3))


def test_anneal_beats_random_on_a_quadratic() -> None:
    space = optuna_space(
        matrix(
            {
                "kind": "hyperopt",
                "algorithm": "anneal",
                "numRuns": 1,
                "metric": METRIC,
                "params": {f"x{i}": {"kind": "uniform", "value": [-5, 5]} for i in range(3)},
            }
        ).hp_params()
    )
    dists = {name: dim.distribution for name, dim in space.items()}
    wins = 0
    for seed in range(5):
        anneal = _run(AnnealSampler(dists, seed=seed), space, 60, _quadratic).best_value
        rand = _run(optuna.samplers.RandomSampler(seed=seed), space, 60, _quadratic).best_value
        wins += anneal < rand
    assert wins >= 4


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
