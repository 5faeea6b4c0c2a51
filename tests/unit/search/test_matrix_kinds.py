"""The conformance suite over every entry of the matrix kind registry."""

from __future__ import annotations

from typing import Any

import pytest

from polyaxon_prefect.search import KINDS, UnknownMatrixKindError, get_kind, matrix_plan
from polyaxon_prefect.testing import MatrixKindTestCase

from ._matrices import matrix

METRIC = {"name": "loss", "optimization": "minimize"}
PARAMS = {
    "lr": {"kind": "uniform", "value": [0, 1]},
    "units": {"kind": "choice", "value": [16, 32, 64]},
}

# A small representative matrix per registered kind (several where a kind has a case that once
# disagreed between plan and study).
SAMPLES: dict[str, list[dict[str, Any]]] = {
    "grid": [{"kind": "grid", "params": {"a": {"kind": "range", "value": [0, 3, 1]}, "b": {
        "kind": "choice", "value": ["x", "y"]}}, "numRuns": 5}],
    "mapping": [{"kind": "mapping", "values": [{"a": 1}, {"a": 3}, {"a": 2}]}],
    "random": [
        {"kind": "random", "numRuns": 4, "seed": 7, "params": PARAMS},
        # a small discrete space caps numRuns
        {"kind": "random", "numRuns": 9, "seed": 7,
         "params": {"units": {"kind": "choice", "value": [16, 32, 64]}}},
    ],
    "hyperband": [
        {"kind": "hyperband", "maxIterations": 9, "eta": 3, "seed": 7, "metric": METRIC,
         "resource": {"name": "epochs", "type": "int"}, "params": PARAMS},
        # fewer distinct configs than the first bracket asks for
        {"kind": "hyperband", "maxIterations": 9, "eta": 3, "seed": 7, "metric": METRIC,
         "resource": {"name": "epochs", "type": "int"},
         "params": {"units": {"kind": "choice", "value": [16, 32, 64, 128]}}},
    ],
    "bayes": [
        {"kind": "bayes", "numInitialRuns": 2, "maxIterations": 2, "seed": 7, "metric": METRIC,
         "utilityFunction": {"acquisitionFunction": "ucb", "kappa": 2.576,
                             "numWarmup": 64, "numIterations": 2},
         "params": PARAMS},
    ],
    "hyperopt": [
        {"kind": "hyperopt", "algorithm": "anneal", "numRuns": 3, "maxIterations": 2, "seed": 7,
         "metric": METRIC, "params": PARAMS},
        # without maxIterations: one round of numRuns, in the plan and in the study
        {"kind": "hyperopt", "algorithm": "tpe", "numRuns": 4, "seed": 7, "metric": METRIC,
         "params": PARAMS},
    ],
    "iterative": [{"kind": "iterative", "maxIterations": 3, "seed": 7}],
}  # fmt: skip

SLOW_KINDS = {"bayes"}
"""Kinds whose conformance run takes seconds (Gaussian-process fits): not in `make test-fast`."""

CASES = [
    pytest.param(data, id=f"{kind}-{position}", marks=[pytest.mark.slow] * (kind in SLOW_KINDS))
    for kind, samples in SAMPLES.items()
    for position, data in enumerate(samples)
]


def test_every_registered_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(KINDS)


@pytest.mark.parametrize("data", CASES)
def test_conformance(data: dict[str, Any]) -> None:
    MatrixKindTestCase(matrix(data)).run_all()


def test_hyperopt_without_max_iterations_runs_num_runs() -> None:
    data = SAMPLES["hyperopt"][1]
    assert "maxIterations" not in data
    case = MatrixKindTestCase(matrix(data))
    assert matrix_plan(case.matrix)["total"] == case.open_study().total == data["numRuns"]


def test_a_kind_missing_from_the_registry_is_named() -> None:
    with pytest.raises(UnknownMatrixKindError, match="no matrix kind `sobol`"):
        get_kind("sobol")
