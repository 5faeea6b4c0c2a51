"""``resume --more N``: a finished study runs exactly N more trials, the done ones never again;
a kind without a count, a search with nothing left or an early-stopped sweep is refused."""

from __future__ import annotations

import json

import pytest

from polyaxon_prefect.search import SweepStudyError, extend_study
from polyaxon_prefect.search._optuna._study import SweepStudy

from ._matrices import matrix

SPACE = {"lr": {"kind": "uniform", "value": [0, 1]}}


def _drain(study: SweepStudy) -> list[dict]:
    asked = []
    while (suggestion := study.ask()) is not None:
        asked.append(suggestion.params)
        study.tell(suggestion.number, status="succeeded", value=float(len(asked)))
    return asked


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def test_random_draws_n_more_distinct_points_and_resumes_where_it_was() -> None:
    data = {"kind": "random", "numRuns": 8, "seed": 5, "params": SPACE}
    study = SweepStudy.open(matrix(data), study_name="r", storage=":memory:")
    first = _drain(study)
    assert len(first) == 8 and study.is_finished()
    assert extend_study(study, 4) == 12
    more = _drain(study)
    assert len(more) == 4
    assert len({_key(p) for p in first + more}) == 12
    assert [r.index for r in study.history()] == list(range(12))
    assert study.is_finished()


def test_a_grid_grows_to_its_points_only() -> None:
    grid = {"kind": "grid", "numRuns": 2, "params": {"a": {"kind": "choice", "value": [1, 2, 3]}}}
    study = SweepStudy.open(matrix(grid), study_name="g", storage=":memory:")
    assert [p["a"] for p in _drain(study)] == [1, 2]
    assert extend_study(study, 5) == 3  # the one point left, not 5
    assert study.matrix.num_runs == 3
    assert [p["a"] for p in _drain(study)] == [3]
    with pytest.raises(SweepStudyError, match="all of its 3 points"):
        extend_study(study, 1)


def test_refusals_are_one_sentence() -> None:
    hyperband = {
        "kind": "hyperband",
        "maxIterations": 9,
        "eta": 3,
        "resource": {"name": "epochs", "type": "int"},
        "metric": {"name": "loss", "optimization": "minimize"},
        "params": SPACE,
    }
    study = SweepStudy.open(matrix(hyperband), study_name="h", storage=":memory:")
    with pytest.raises(SweepStudyError, match="no count of trials to extend"):
        extend_study(study, 2)
    data = {"kind": "random", "numRuns": 2, "seed": 5, "params": SPACE}
    stopped = SweepStudy.open(matrix(data), study_name="s", storage=":memory:")
    stopped.stop("loss reached 0.1")
    with pytest.raises(SweepStudyError, match="early stopping"):
        extend_study(stopped, 2)
    choices = {"kind": "random", "numRuns": 2, "seed": 5}
    choices["params"] = {"c": {"kind": "choice", "value": [1, 2]}}
    small = SweepStudy.open(matrix(choices), study_name="c", storage=":memory:")
    _drain(small)
    with pytest.raises(SweepStudyError, match="every distinct point"):
        extend_study(small, 1)


def test_more_past_the_sweep_limit_is_refused_before_anything_is_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = {"kind": "random", "numRuns": 2, "seed": 5, "params": SPACE}
    study = SweepStudy.open(matrix(data), study_name="big", storage=":memory:")
    _drain(study)
    monkeypatch.setenv("POLYAXON_PREFECT_MAX_GRID", "10")
    with pytest.raises(SweepStudyError, match=r"9 more would make the sweep 11 trials, more than"):
        extend_study(study, 9)  # 10**9 drew every point up front: 22.6 GB
    assert study.total == 2 and study.matrix.num_runs == 2
    assert extend_study(study, 8) == 10
