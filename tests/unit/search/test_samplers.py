from __future__ import annotations

import math
import sys
import warnings
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.trial import TrialState

from polyaxon_prefect.search._kinds import build_sampler
from polyaxon_prefect.search._optuna._study import SweepStudy
from polyaxon_prefect.search._samplers import (
    AnnealSampler,
    GaussianProcessSampler,
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


def test_tpe_is_multivariate_and_counts_the_trials_in_flight() -> None:
    """tpe spells out ``multivariate`` and ``constant_liar`` (their defaults changed in Optuna 5):
    it draws the params jointly, and a trial still running steers the next suggestion (a failed
    one does not)."""
    m = matrix(
        {"kind": "hyperopt", "algorithm": "tpe", "numRuns": 6, "metric": METRIC, "params": PARAMS}
    )
    space = optuna_space(m.hp_params())
    distributions = {name: dim.distribution for name, dim in space.items()}

    def next_suggestion(in_flight: TrialState) -> tuple[dict, list[str]]:
        sampler, _ = build_sampler(m, space, seed=1)
        study = optuna.create_study(sampler=sampler)
        for i in range(10):  # tpe's 10 start-up trials, the same in both studies
            study.enqueue_trial({"x": -3 + 0.6 * i, "c": "abc"[i % 3], "n": 1 + i % 5})
            trial = study.ask(distributions)
            study.tell(trial, _objective({n: space[n].decode(v) for n, v in trial.params.items()}))
        study.enqueue_trial({"x": 1.0, "c": "b", "n": 3})
        flight = study.ask(distributions)
        if in_flight == TrialState.FAIL:
            study.tell(flight, state=TrialState.FAIL)
        following = study.ask(distributions)
        return following.params, sorted(
            sampler.infer_relative_search_space(study, study.trials[-1])
        )

    running, joint = next_suggestion(TrialState.RUNNING)
    failed, _ = next_suggestion(TrialState.FAIL)
    assert joint == ["c", "n", "x"]  # multivariate: one joint draw of every param
    assert running != failed  # constant liar: the trial in flight counts


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
