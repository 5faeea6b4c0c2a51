"""What `ls -q` asks of Prefect's API: only filters that keep every run the query keeps
(the rows are checked again), values as written, negations and `nil` left to the rows."""

from __future__ import annotations

from prefect.client.schemas.objects import StateType

from polyaxon_prefect.prefect.runs._runs_query import _pushed_filter
from polyaxon_prefect.query import parse_query


def test_values_are_pushed_as_written() -> None:
    pushed = _pushed_filter(parse_query("tags:true, tags:1|x, name:Net|vgg, status:failed"))
    assert pushed.tags.all_ == ["true"] and pushed.tags.any_ == ["1", "x"]
    assert pushed.name.any_ == ["Net", "vgg"]
    assert set(pushed.state.type.any_) == {StateType.FAILED, StateType.CRASHED}
    assert pushed.parent_task_run_id.is_null_ is True  # top-level runs only


def test_negations_nil_and_client_side_fields_are_not_pushed() -> None:
    pushed = _pushed_filter(
        parse_query("status:~running, name:~x, tags:nil, metrics.loss:<1, started_at:~2026-01-01")
    )
    assert pushed.state is None and pushed.name is None and pushed.tags is None
    assert pushed.start_time is None


def test_a_date_is_pushed_as_its_whole_span() -> None:
    pushed = _pushed_filter(parse_query("started_at:2026-01-01, finished_at:>=2026-02-01 10:00"))
    start = pushed.start_time
    assert (start.before_ - start.after_).total_seconds() == 86400
    assert pushed.end_time.before_ is None and pushed.end_time.after_ is not None
