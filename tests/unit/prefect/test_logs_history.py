"""``statuses`` reads a flow run's states through the one mapping (`_states`), oldest first,
one line per change; ``logs`` finds a DAG's ops and a sweep's trials in what `get` returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prefect.states import Cancelled, Completed, Failed, Pending, Running, Scheduled

from polyaxon_prefect.client.logs._logs_verb import run_children as _children
from polyaxon_prefect.prefect._states import SKIPPED_STATE_NAME
from polyaxon_prefect.prefect.runs._logs import _changes


def _at(state: Any, seconds: float) -> Any:
    state.timestamp = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return state


def test_states_become_polyaxon_status_changes_in_time_order():
    states = [
        _at(Completed(message="done"), 4),
        _at(Running(), 2),
        _at(Running(name="Retrying"), 3),
        _at(Scheduled(), 0),
        _at(Pending(), 1),
        _at(Running(), 2.5),
    ]
    changes = _changes(states)
    assert [c.status for c in changes] == [
        "scheduled",
        "queued",
        "running",
        "retrying",
        "succeeded",
    ]
    assert changes[-1].message == "done"
    assert changes[-1].record()["timestamp"] == "2026-01-01T00:00:04+00:00"
    assert "  succeeded  done" in changes[-1].line()


def test_the_end_states_read_as_polyaxon_says_them():
    ends = [Failed(), Cancelled(), Completed(name=SKIPPED_STATE_NAME)]
    assert [_changes([_at(state, 0)])[0].status for state in ends] == [
        "failed",
        "stopped",
        "skipped",
    ]


def test_children_are_every_op_and_trial_below_the_run_by_path():
    run = {
        "ops": {
            "first": {"uuid": "u1"},
            "nested": {"uuid": "u2", "ops": {"a": {"uuid": "u3"}}},
            "tune": {"uuid": "u4", "trials": [{"index": 0, "uuid": "t0"}, {"index": 1}]},
            "skipped": {"uuid": None},
        }
    }
    assert _children(run) == {
        "first": "u1",
        "nested": "u2",
        "nested/a": "u3",
        "tune": "u4",
        "tune/trial-0": "t0",
    }
    assert _children({"trials": [{"index": 3, "uuid": "t3"}]}) == {"trial-3": "t3"}
