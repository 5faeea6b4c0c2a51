"""The sweep's bookkeeping and reports (`search/_sweep.py`), without Prefect or a study."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.search._sweep import (
    SweepRun,
    best_markdown,
    leaderboard_rows,
    trial_name,
    trial_results,
)
from polyaxon_prefect.specs import MetricEarlyStopping, Status


@dataclass
class _Record:
    index: int
    status: str
    value: Any
    params: dict[str, Any] = field(default_factory=dict)
    uuid: str = "u"


def test_a_cancelled_trial_that_failed_on_its_way_out_is_stopped() -> None:
    assert SweepRun.trial_status("failed", cancelled=True) == "stopped"
    assert SweepRun.trial_status("failed", cancelled=False) == "failed"
    assert SweepRun.trial_status("running", cancelled=False) == "failed"
    assert SweepRun.trial_status("succeeded", cancelled=True) == "succeeded"


def test_early_stopping_decides_once_and_the_decision_is_the_sweeps_status() -> None:
    policy = MetricEarlyStopping.model_validate(
        {
            "kind": "metric_early_stopping",
            "metric": "loss",
            "value": 0.1,
            "optimization": "minimize",
        }
    )
    run = SweepRun([policy])
    assert run.trial_finished("succeeded", {"loss": 0.5}, total=4) is None
    decision = run.trial_finished("succeeded", {"loss": 0.05}, total=4)
    assert decision is not None and run.decision is decision
    assert run.trial_finished("succeeded", {"loss": 0.01}, total=4) is None  # decided already

    history = [_Record(0, "succeeded", 0.5), _Record(1, "succeeded", 0.05)]
    status, reason, message = run.outcome(history, None, best_index=1)

    assert status == "succeeded" and reason == decision.reason
    assert message.startswith("2 trials: 2 succeeded; ") and message.endswith("; best trial 1")


def test_without_a_decision_a_failed_trial_fails_the_sweep() -> None:
    run = SweepRun([])
    history = [_Record(0, "succeeded", 1.0), _Record(1, "failed", None)]
    assert run.outcome(history, None, None)[0] == "failed"
    assert run.outcome(history[:1], "the study is done", None)[:2] == (
        "succeeded",
        "the study is done",
    )


def test_the_leaderboard_ranks_by_metric_with_missing_values_last() -> None:
    history = [
        _Record(0, "succeeded", 0.3, {"lr": 0.1}),
        _Record(1, "failed", None, {"lr": 0.2}),
        _Record(2, "succeeded", float("nan"), {"lr": 0.3}),
        _Record(3, "succeeded", 0.1, {"lr": {"nested": 1}}),
    ]
    rows = leaderboard_rows(history, "loss", maximize=False)
    assert [r["trial"] for r in rows] == [3, 0, 1, 2]
    assert rows[0] == {
        "rank": 1,
        "trial": 3,
        "status": "succeeded",
        "loss": 0.1,
        "lr": '{"nested": 1}',
        "uuid": "u",
    }
    assert [r["trial"] for r in leaderboard_rows(history, "acc", maximize=True)][:2] == [0, 3]


def test_names_and_best_markdown() -> None:
    assert trial_name(7, {"lr": 0.0123456789, "opt": "sgd"}) == "trial-7 lr=0.0123457 opt=sgd"
    assert len(trial_name(1, {"p": "x" * 500})) == 120
    best = {"index": 3, "status": "succeeded", "value": 0.1, "params": {"lr": 0.1}}
    text = best_markdown("sweep", best, "loss")
    assert "Best trial: **3** (succeeded), loss = 0.1" in text and "| lr | 0.1 |" in text
    assert "No best trial" in best_markdown("sweep", None, "loss")


def test_a_sweep_with_points_not_run_ends_stopped_saying_how_many() -> None:
    history = [_Record(0, "succeeded", None), _Record(1, "succeeded", None)]
    status, reason, message = SweepRun([]).outcome(history, None, None, (4, 6))
    assert (status, reason) == ("stopped", "4 of 6 points not run; run again with --resume")
    assert message == "2 trials: 2 succeeded; 4 of 6 points not run; run again with --resume"
    assert SweepRun([]).outcome(history, None, None, (0, 2))[0] == "succeeded"
    stopped = SweepRun([])
    stopped.stop("interrupted (SIGINT)", Status.STOPPED)
    assert stopped.outcome(history, None, None, (1, None))[1] == (
        "interrupted (SIGINT); 1 point not run; run again with --resume"
    )
    decided = SweepRun([])  # early stopping decided it: the points left are not owed
    decided.stop("loss reached 0.1", Status.SUCCEEDED)
    assert decided.outcome(history, None, None, (4, 6))[:2] == ("succeeded", "loss reached 0.1")


def test_without_a_metric_the_leaderboard_has_outputs_and_last_metrics() -> None:
    record = _Record(0, "succeeded", None, {"lr": 0.1})
    record.outputs = {"loss": 0.25, "accuracy": 0.9}  # type: ignore[attr-defined]
    record.metrics = {"loss": 0.3, "step_time": 1.5}  # type: ignore[attr-defined]
    [row] = leaderboard_rows([record], None, maximize=False)
    assert row == {
        "rank": 1,
        "trial": 0,
        "status": "succeeded",
        "lr": 0.1,
        "loss": 0.25,  # the output, not the last logged value
        "accuracy": 0.9,
        "step_time": 1.5,
        "uuid": "u",
    }
    assert trial_results(record.outputs, record.metrics, "loss") == {  # type: ignore[attr-defined]
        "accuracy": 0.9,
        "step_time": 1.5,
    }
