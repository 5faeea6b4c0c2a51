"""``ls -q QUERY --sort SPEC -io``: runs read back from Prefect's REST API, filtered and sorted.

What the API can filter is pushed to it, as a pre-filter that can only keep too many runs
(status -> state types, name -> exact names or Prefect's case-insensitive ``like``, tags,
start and end times); every condition is then checked again on the rows here
(`polyaxon_prefect.query`), so a pushed filter never decides alone. Params, outputs and metrics
come from the runs' report artifacts, read for a whole page of runs in one query (the same
reports `get` reads), and only when the query, the sort or ``-io`` needs them.

Without a sort, runs are read newest first a page at a time until ``limit`` of them match; a
sort needs every matching run before the first ``limit`` can be known, so it reads them all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from polyaxon_prefect.client import (
    PAGE,
    STATE_TYPES,
    Api,
    artifacts_of,
    read_details,
    row,
    seconds_run,
)
from polyaxon_prefect.query import Condition, SortKey, matches, sort_rows

__all__ = ["DETAIL_COLUMNS", "pushed_filter", "query_runs"]

DETAIL_COLUMNS = frozenset({"params", "outputs", "metrics", "id"})
"""Row columns read from the report artifacts (``id`` also answers to the Polyaxon uuid)."""

_SHOWN_DURATION = "\0duration"
"""Where a record keeps the duration as `ls` shows it (``0.5s``, ``3.1s so far``) while the
query reads ``duration`` as seconds."""


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _record(shown: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The row the query reads: native values (datetimes, seconds) beside the shown ones."""
    return {
        **shown,
        "created_at": _time(run.get("created")),
        "started_at": _time(run.get("start_time")),
        "finished_at": _time(run.get("end_time")),
        "duration": seconds_run(run),
        _SHOWN_DURATION: shown["duration"],
    }


def _bounds(c: Condition) -> tuple[datetime | None, datetime | None] | None:
    """The widest ``(after, before)`` times a date condition keeps (inclusive both ends)."""
    first, last = c.values[0], c.values[-1]
    if c.op in ("=", ".."):
        return first.start, last.end
    if c.op in (">", ">="):
        return first.start, None
    if c.op in ("<", "<="):
        return None, first.end
    return None


def pushed_filter(conditions: tuple[Condition, ...]) -> dict[str, Any]:
    """The flow-run filter (the API's ``FlowRunFilter`` JSON) of top-level runs that keeps at
    least every run ``conditions`` keep."""
    parts: dict[str, Any] = {"parent_task_run_id": {"is_null_": True}}
    tags_all: list[str] = []
    tags_any: list[str] | None = None
    for c in conditions:
        if c.negation or c.op == "nil":
            continue
        texts = list(c.texts)  # as written: `tags:true` is the tag "true", not True
        if c.field == "status" and c.op in ("=", "|") and "state" not in parts:
            types = sorted({t for status in texts for t in STATE_TYPES[status]})
            parts["state"] = {"type": {"any_": types}}
        elif c.field == "name" and "name" not in parts:
            if c.op in ("=", "|"):
                parts["name"] = {"any_": texts}
            elif c.op in ("%%", "_%", "%_"):
                parts["name"] = {"like_": texts[0]}
        elif c.field == "tags" and c.op == "=":
            tags_all.append(texts[0])
        elif c.field == "tags" and c.op == "|" and tags_any is None:
            tags_any = texts
        elif c.kind == "datetime" and c.column in ("started_at", "finished_at"):
            bounds = _bounds(c)
            name = "start_time" if c.column == "started_at" else "end_time"
            if bounds is not None and name not in parts:
                after, before = bounds
                parts[name] = {
                    key: moment.isoformat()
                    for key, moment in (("after_", after), ("before_", before))
                    if moment is not None
                }
    if tags_all or tags_any:
        wanted = (("all_", tags_all), ("any_", tags_any))
        parts["tags"] = {key: value for key, value in wanted if value}
    return parts


def query_runs(
    api: Api,
    conditions: tuple[Condition, ...] = (),
    sort: tuple[SortKey, ...] = (),
    *,
    limit: int = 20,
    details: bool = False,
) -> list[dict[str, Any]]:
    """The top-level runs that meet every condition, ordered by ``sort`` (default: newest
    first), at most ``limit``. Each row is `list_runs`'s, plus ``uuid``, ``params``, ``outputs``
    and ``metrics`` when ``details`` or a condition or sort key needs them."""
    columns = {c.column for c in conditions} | {k.column for k in sort}
    with_details = details or bool(columns & DETAIL_COLUMNS)
    pushed = pushed_filter(conditions)
    kept: list[dict[str, Any]] = []
    offset = 0
    while sort or len(kept) < limit:
        body = {"flow_runs": pushed, "sort": "START_TIME_DESC", "limit": PAGE, "offset": offset}
        page: list[dict[str, Any]] = api.post("/flow_runs/filter", body)
        offset += len(page)
        artifacts = artifacts_of(api, [str(run["id"]) for run in page])
        for run in page:
            found = artifacts[str(run["id"])]
            shown = row(run, found)
            if with_details:
                shown.update(read_details(api, run, found))
            record = _record(shown, run)
            if matches(record, conditions):
                kept.append(record)
        if len(page) < PAGE:
            break
    ordered = sort_rows(kept, sort)[:limit]
    for record in ordered:  # the native values were for the query; rows stay JSON-friendly
        for key in ("created_at", "started_at", "finished_at"):
            record.pop(key)
        record["duration"] = record.pop(_SHOWN_DURATION)
    return ordered
