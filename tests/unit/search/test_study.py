from __future__ import annotations

from polyaxon_prefect.search import grid_suggestions
from polyaxon_prefect.search._optuna._study import SweepStudy

from ._matrices import matrix

GRID = {
    "kind": "grid",
    "params": {
        "lr": {"kind": "linspace", "value": "0.001:0.1:5"},
        "act": {"kind": "choice", "value": ["relu", "sigmoid"]},
        "epochs": {"kind": "range", "value": [1, 4, 1]},
    },
    "earlyStopping": [
        {
            "kind": "metric_early_stopping",
            "metric": "loss",
            "value": 0.0,
            "optimization": "minimize",
        }
    ],
}


def _drain(study: SweepStudy, value=lambda s: 0.0) -> list:
    asked = []
    while (suggestion := study.ask()) is not None:
        asked.append(suggestion)
        study.tell(suggestion.number, status="succeeded", value=value(suggestion))
    return asked


def test_grid_runs_every_point_in_polyaxon_order() -> None:
    grid = matrix(GRID)
    study = SweepStudy.open(grid, study_name="grid-order", storage=":memory:")
    asked = _drain(study)
    assert study.total == 30
    assert [s.params for s in asked] == grid_suggestions(grid)
    assert [s.index for s in asked] == list(range(30))
    assert study.is_finished()


def test_mapping_and_random_order_and_reproducibility() -> None:
    mapping = matrix({"kind": "mapping", "values": [{"a": 1}, {"a": 3}, {"a": 2}]})
    study = SweepStudy.open(mapping, study_name="map", storage=":memory:")
    assert [s.params["a"] for s in _drain(study)] == [1, 3, 2]
    data = {
        "kind": "random",
        "numRuns": 6,
        "seed": 11,
        "params": {
            "x": {"kind": "uniform", "value": [0, 1]},
            "c": {"kind": "choice", "value": [1, 2]},
        },
    }
    first = _drain(SweepStudy.open(matrix(data), study_name="r1", storage=":memory:"))
    again = _drain(SweepStudy.open(matrix(data), study_name="r2", storage=":memory:"))
    assert len(first) == 6
    assert [s.params for s in first] == [s.params for s in again]


def test_best_uses_metric_direction_and_values_from_outputs() -> None:
    study = SweepStudy.open(matrix(GRID), study_name="best", storage=":memory:")
    for _ in range(4):
        s = study.ask()
        study.tell(s.number, status="succeeded", outputs={"loss": 10 - s.index})
    s = study.ask()
    study.tell(s.number, status="failed", outputs={"loss": -100})
    best = study.best()
    assert best is not None and best.index == 3 and best.value == 7
    assert study.history()[4].status == "failed"


def test_stop_drops_queued_trials() -> None:
    study = SweepStudy.open(matrix(GRID), study_name="stop", storage=":memory:")
    running = study.ask()
    study.stop("loss reached 0.0")
    assert study.ask() is None
    assert not study.is_finished()
    study.tell(running.number, status="stopped")
    assert study.is_finished()
    assert study.stop_reason == "loss reached 0.0"
    assert [r.status for r in study.history()] == ["stopped"]
