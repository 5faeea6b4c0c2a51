from __future__ import annotations

from collections import Counter

import pytest

from polyaxon_prefect.search._optuna._study import SweepStudy

from ._matrices import matrix


def _hyperband(max_iterations: int, eta: int, resource_type: str = "int") -> object:
    return matrix(
        {
            "kind": "hyperband",
            "maxIterations": max_iterations,
            "eta": eta,
            "seed": 3,
            "resource": {"name": "epochs", "type": resource_type},
            "metric": {"name": "accuracy", "optimization": "maximize"},
            "params": {"lr": {"kind": "uniform", "value": [0, 1]}},
        }
    )


def _run(study: SweepStudy) -> tuple[Counter, list]:
    """Run rung by rung like a sweep with unlimited concurrency; accuracy = lr."""
    rungs: Counter = Counter()
    order = []
    while not study.is_finished():
        batch = []
        while (s := study.ask()) is not None:
            batch.append(s)
        assert batch, "a finished rung must release the next one"
        for s in batch:
            rungs[(s.attrs["bracket"], s.attrs["rung"], s.params["epochs"])] += 1
            order.append(s)
        for s in batch:
            study.tell(s.number, status="succeeded", outputs={"accuracy": s.params["lr"]})
    return rungs, order


@pytest.mark.parametrize(
    ("max_iterations", "expected"),
    [
        (9, {(0, 0, 1): 9, (0, 1, 3): 3, (0, 2, 9): 1, (1, 0, 3): 5, (1, 1, 9): 1, (2, 0, 9): 3}),
        pytest.param(  # 206 trials: seconds, so outside `make test-fast`
            81,
            {
                (0, 0, 1): 81, (0, 1, 3): 27, (0, 2, 9): 9, (0, 3, 27): 3, (0, 4, 81): 1,
                (1, 0, 3): 34, (1, 1, 9): 11, (1, 2, 27): 3, (1, 3, 81): 1,
                (2, 0, 9): 15, (2, 1, 27): 5, (2, 2, 81): 1,
                (3, 0, 27): 8, (3, 1, 81): 2,
                (4, 0, 81): 5,
            },
            marks=pytest.mark.slow,
        ),
    ],
)  # fmt: skip
def test_rungs_and_resources_follow_the_schedule(max_iterations: int, expected: dict) -> None:
    study = SweepStudy.open(
        _hyperband(max_iterations, 3), study_name=f"hb-{max_iterations}", storage=":memory:"
    )
    rungs, order = _run(study)
    assert dict(rungs) == expected
    assert study.total == sum(expected.values())
    assert [s.index for s in order] == list(range(study.total))
    assert all(isinstance(s.params["epochs"], int) for s in order)


def test_promotion_keeps_the_best_configs_and_waits_for_the_rung() -> None:
    study = SweepStudy.open(_hyperband(9, 3), study_name="promo", storage=":memory:")
    first = [study.ask() for _ in range(9)]
    assert study.ask() is None  # rung 0 in flight
    for s in first[:-1]:
        study.tell(s.number, status="succeeded", value=s.params["lr"])
    assert study.ask() is None  # one config still running
    study.tell(first[-1].number, status="failed")
    promoted = [study.ask() for _ in range(3)]
    best = sorted(first[:-1], key=lambda s: -s.params["lr"])[:3]
    assert sorted(s.attrs["config"] for s in promoted) == sorted(s.attrs["config"] for s in best)
    assert {s.params["lr"] for s in promoted} == {s.params["lr"] for s in best}
    assert {s.params["epochs"] for s in promoted} == {3}
    assert study.ask() is None


def test_resource_type_follows_the_declared_input() -> None:
    study = SweepStudy.open(
        _hyperband(9, 3), study_name="typed", storage=":memory:", input_types={"epochs": "float"}
    )
    assert study.ask().params["epochs"] == 1.0
    assert isinstance(study.ask().params["epochs"], float)
