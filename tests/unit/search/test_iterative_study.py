from __future__ import annotations

from polyaxon_prefect.search._optuna._study import SweepStudy

from ._matrices import matrix


def _iterative(max_iterations: int = 3) -> object:
    return matrix(
        {
            "kind": "iterative",
            "maxIterations": max_iterations,
            "tuner": {"hubRef": "my-tuner"},
            "params": {"lr": {"kind": "uniform", "value": [0, 1]}},
        }
    )


def test_tuner_rounds_until_max_iterations() -> None:
    study = SweepStudy.open(_iterative(2), study_name="it", storage=":memory:")
    assert study.total is None
    request = study.tuner_request()
    assert request["iteration"] == 0 and request["configs"] == []
    assert study.tuner_request() is None  # the tuner is already running
    study.add_suggestions([{"lr": 0.1}, {"lr": 0.2}])
    first = study.ask()
    assert study.tuner_request() is None  # suggestions still pending
    second = study.ask()
    assert (first.index, second.index, first.attrs) == (0, 1, {"iteration": 0})
    study.tell(first.number, status="succeeded", outputs={"loss": 1.0})
    study.tell(second.number, status="failed")
    assert not study.is_finished()
    request = study.tuner_request()
    assert request["iteration"] == 1
    assert request["configs"] == [{"lr": 0.1}, {"lr": 0.2}]
    assert request["metrics"] == [{"loss": 1.0}, {}]
    study.add_suggestions([{"lr": 0.3}])
    third = study.ask()
    assert third.index == 2 and third.params == {"lr": 0.3}
    study.tell(third.number, status="succeeded")
    assert study.tuner_request() is None  # maxIterations reached
    assert study.is_finished()
    assert [r.status for r in study.history()] == ["succeeded", "failed", "succeeded"]


def test_empty_suggestions_end_the_sweep() -> None:
    study = SweepStudy.open(_iterative(), study_name="empty", storage=":memory:")
    assert study.tuner_request() is not None
    assert not study.is_finished()
    study.add_suggestions([])
    assert study.ask() is None
    assert study.tuner_request() is None
    assert study.is_finished()


def test_recover_reissues_the_tuner_request() -> None:
    study = SweepStudy.open(_iterative(), study_name="tuner-crash", storage=":memory:")
    assert study.tuner_request()["iteration"] == 0
    study.recover()  # the parent died while the tuner ran
    assert study.tuner_request()["iteration"] == 0
