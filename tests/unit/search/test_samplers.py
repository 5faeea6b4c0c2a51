from __future__ import annotations

import math

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution

from polyaxon_prefect.search._samplers import (
    AnnealSampler,
    GaussianProcessSampler,
    build_sampler,
    optuna_space,
)

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
    space, _ = optuna_space(m.hp_params())
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
    sampler, _ = build_sampler(m, optuna_space(m.hp_params())[0], seed=1)
    assert sampler._multivariate is True and sampler._constant_liar is True


def test_utility_function_is_honoured_or_warned() -> None:
    base = {
        "kind": "bayes",
        "numInitialRuns": 2,
        "maxIterations": 2,
        "metric": METRIC,
        "params": PARAMS,
    }
    ucb = matrix(
        {
            **base,
            "utilityFunction": {
                "acquisitionFunction": "ucb",
                "kappa": 1.5,
                "gaussianProcess": {"kernel": "rbf", "numRestartsOptimizer": 2},
            },
        }
    )
    sampler, warnings = build_sampler(ucb, optuna_space(ucb.hp_params())[0], seed=1)
    assert isinstance(sampler, GaussianProcessSampler)
    assert (sampler.acquisition, sampler.kappa, sampler.kernel, sampler.num_restarts) == (
        "ucb",
        1.5,
        "rbf",
        2,
    )
    assert warnings == []
    odd = matrix(
        {
            **base,
            "utilityFunction": {
                "acquisitionFunction": "poi",
                "eps": 0.1,
                "gaussianProcess": {"kernel": "matern", "nu": 2.2},
            },
        }
    )
    sampler, warnings = build_sampler(odd, optuna_space(odd.hp_params())[0], seed=1)
    assert sampler.nu == 2.5 and sampler.eps == 0.1
    assert any("nu=2.2: only 0.5, 1.5 and 2.5" in w and "using 2.5" in w for w in warnings)
    plain = matrix(base)
    assert any(
        "log-EI" in w for w in build_sampler(plain, optuna_space(plain.hp_params())[0], seed=1)[1]
    )


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
    space, warnings = optuna_space(m.hp_params())
    assert space["lu"].distribution == FloatDistribution(1.0, math.exp(2), log=True)
    assert space["qu"].decode(0.99) == 0.75
    assert space["nn"].decode(0.5) == 10.0
    assert abs(space["nn"].decode(0.8413447460685429) - 12.0) < 1e-9
    assert space["ls"].distribution == CategoricalDistribution((1.0, 10.0, 100.0))
    assert any("`nn` is a normal" in w for w in warnings)


def _quadratic(p: dict) -> float:
    return sum((p[f"x{i}"] - 0.3) ** 2 for i in range(3))


def test_anneal_beats_random_on_a_quadratic() -> None:
    space, _ = optuna_space(
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
    space, _ = optuna_space(
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
