"""A run's log lines read from Prefect's REST API as JSON (``logs`` and ``logs -f``): the one
reader of both ways in (the flow layer sends these requests through Prefect's client, the thin
client through `rest._http`).

A run's lines are the logs of its flow run and of every flow run below it: a DAG's nested DAG
and sweep ops are subflows, a sweep's trials are flow runs of their own. Each line gets the op
path it is of (`_log_lines`): the task run a line was logged from is a DAG op (its name is the
op's), a subflow is labelled with the first word of its name (the op's name, or ``trial-3`` for
a trial). A job's task run is the job itself, so a job's lines have no op.

Following (``-f``) polls the API with a cursor: logs at or after the newest timestamp seen,
less `_LOOKBACK_SECONDS` (Prefect ships logs in batches, per process, so a trial's line can
arrive after a later line of another process), with the ids already printed dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from polyaxon_prefect.client.logs._log_lines import LogLine
from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.runs._status_words import status_of

__all__ = [
    "FOLLOW_POLL_SECONDS",
    "SETTLE_SECONDS",
    "final_status",
    "follow_logs",
    "read_run_logs",
]

FOLLOW_POLL_SECONDS = 0.3
"""How often ``-f`` asks the API for new lines (and ``-w`` for new states)."""
SETTLE_SECONDS = 2.5
"""After the run ended, how long ``-f`` still waits for lines: the run's process sends its last
batch when it exits, up to Prefect's batch interval (2 s by default) after the final state."""
_LOOKBACK_SECONDS = 5.0
_PAGE = 200
"""Logs (and runs) per request (the API's default upper bound)."""
_FINAL = frozenset({"COMPLETED", "FAILED", "CRASHED", "CANCELLED"})
"""Prefect's terminal state types (``State.is_final``)."""


def _when(value: Any) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _filtered(api: Api, route: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every object ``POST route`` matches, ``_PAGE`` at a time (``body`` holds the filter and
    a sort that keeps pages stable)."""
    offset = 0
    while True:
        page = api.post(route, {**body, "limit": _PAGE, "offset": offset})
        yield from page
        if len(page) < _PAGE:
            return
        offset += _PAGE


def _task_runs(api: Api, ids: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for start in range(0, len(ids), _PAGE):
        wanted = {"task_runs": {"id": {"any_": ids[start : start + _PAGE]}}, "limit": _PAGE}
        found += api.post("/task_runs/filter", wanted)
    return found


@dataclass
class _Tree:
    """The flow runs of one run (the root and every one below it) and the names of the task
    runs its lines were logged from."""

    root: str
    root_name: str
    dag: bool
    """Whether the root's task runs are a DAG's ops; else the one named as the root is the job
    itself (a run still going may not be known as a DAG yet: its ops are named otherwise)."""
    paths: dict[str, str | None] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths[self.root] = None

    def refresh(self, api: Api) -> None:
        """Add the flow runs started below the known ones since the last call."""
        level = list(self.paths)
        while level:
            wanted = {"flow_runs": {"parent_flow_run_id": {"any_": level}}, "sort": "ID_DESC"}
            children = [
                child
                for child in _filtered(api, "/flow_runs/filter", wanted)
                if child["id"] not in self.paths
            ]
            parents = [c["parent_task_run_id"] for c in children if c.get("parent_task_run_id")]
            owners = {t["id"]: t.get("flow_run_id") for t in _task_runs(api, list(set(parents)))}
            level = []
            for child in children:
                owner = owners.get(child.get("parent_task_run_id"))
                parent = self.paths.get(owner) if owner is not None else None
                label = (child.get("name") or "").split(" ", 1)[0] or child["id"]
                self.paths[child["id"]] = f"{parent}/{label}" if parent else label
                level.append(child["id"])

    def name_tasks(self, api: Api, logs: list[dict[str, Any]]) -> None:
        """The names of the task runs of ``logs`` not known yet."""
        unknown = {log["task_run_id"] for log in logs if log.get("task_run_id")} - set(self.tasks)
        self.tasks.update({t["id"]: t["name"] for t in _task_runs(api, sorted(unknown))})

    def line(self, log: dict[str, Any]) -> LogLine:
        path = self.paths.get(log["flow_run_id"])
        if log.get("task_run_id") is not None:
            task = self.tasks.get(log["task_run_id"])
            job = log["flow_run_id"] == self.root and not self.dag and task == self.root_name
            if task and not job:
                path = f"{path}/{task}" if path else task
        return LogLine(
            log["message"], timestamp=_when(log["timestamp"]), level=log["level"], op=path
        )


def _tree(api: Api, flow_run_id: str, dag: bool) -> _Tree:
    root = api.get(f"/flow_runs/{flow_run_id}") or {}
    return _Tree(root.get("id") or flow_run_id, root.get("name") or "", dag)


@dataclass
class _Cursor:
    """Where a reader is in a run's logs: the newest timestamp seen, and the ids printed that
    the next read can return again (those within `_LOOKBACK_SECONDS` of it; older ones are
    forgotten, so a long ``-f`` does not grow)."""

    newest: datetime | None = None
    seen: dict[str, datetime] = field(default_factory=dict)

    def take(self, api: Api, tree: _Tree) -> list[LogLine]:
        after = self.newest - timedelta(seconds=_LOOKBACK_SECONDS) if self.newest else None
        wanted: dict[str, Any] = {"flow_run_id": {"any_": list(tree.paths)}}
        if after is not None:
            wanted["timestamp"] = {"after_": after.isoformat()}
        body = {"logs": wanted, "sort": "TIMESTAMP_ASC"}
        fresh = [log for log in _filtered(api, "/logs/filter", body) if log["id"] not in self.seen]
        if not fresh:
            return []
        newest = max(_when(log["timestamp"]) for log in fresh)
        self.newest = max(newest, self.newest) if self.newest else newest
        horizon = self.newest - timedelta(seconds=_LOOKBACK_SECONDS)
        kept = {ident: at for ident, at in self.seen.items() if at >= horizon}
        for log in fresh:
            if _when(log["timestamp"]) >= horizon:
                kept[log["id"]] = _when(log["timestamp"])
        self.seen = kept
        tree.name_tasks(api, fresh)
        return [tree.line(log) for log in fresh]


def read_run_logs(api: Api, flow_run_id: str, *, dag: bool) -> list[LogLine]:
    """Every line the API has of the run (flow run ``flow_run_id``; ``dag``: a DAG, whose
    task runs are its ops), oldest first."""
    tree = _tree(api, flow_run_id, dag)
    tree.refresh(api)
    return _Cursor().take(api, tree)


def final_status(api: Api, flow_run_id: str) -> str | None:
    """The run's Polyaxon status once it ended, else None."""
    state = (api.get(f"/flow_runs/{flow_run_id}") or {}).get("state")
    if not state or state.get("type") not in _FINAL:
        return None
    return status_of(state["type"], state.get("name"))


def follow_logs(
    api: Api,
    flow_run_id: str,
    *,
    dag: bool,
    emit: Callable[[list[LogLine]], None],
    poll: float = FOLLOW_POLL_SECONDS,
) -> str:
    """Hand every line of the run to ``emit`` as it reaches the API, until the run ended and
    `SETTLE_SECONDS` passed without a new line; return its Polyaxon status."""
    tree = _tree(api, flow_run_id, dag)
    cursor = _Cursor()
    status: str | None = None
    quiet_since: float | None = None
    while True:
        if status is None:
            status = final_status(api, tree.root)  # before the read: none is missed
            tree.refresh(api)
        lines = cursor.take(api, tree)
        if lines:
            emit(lines)
        now = time.monotonic()
        if status is not None:
            quiet_since = now if lines or quiet_since is None else quiet_since
            if now - quiet_since >= SETTLE_SECONDS:
                return status
        time.sleep(poll)
