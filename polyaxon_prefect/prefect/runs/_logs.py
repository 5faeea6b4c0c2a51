"""A run's log lines and status history read from Prefect's API (``logs``, ``statuses``).

A run's lines are the logs of its flow run and of every flow run below it: a DAG's nested DAG
and sweep ops are subflows, a sweep's trials are flow runs of their own. Each line gets the op
path it is of (`runtime._log_lines`): the task run a line was logged from is a DAG op (its
name is the op's), a subflow is labelled with the first word of its name (the op's name, or
``trial-3`` for a trial). A job's task run is the job itself, so a job's lines have no op.

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
from uuid import UUID

from polyaxon_prefect.client import StatusChange, status_changes
from polyaxon_prefect.client import status_history as read_status_history
from polyaxon_prefect.prefect.runs._runs import PrefectApi, _json, api_client
from polyaxon_prefect.runtime import LogLine

__all__ = [
    "FOLLOW_POLL_SECONDS",
    "SETTLE_SECONDS",
    "StatusChange",
    "follow_logs",
    "read_run_logs",
    "status_history",
    "watch_statuses",
]

FOLLOW_POLL_SECONDS = 0.3
"""How often ``-f`` asks the API for new lines (and ``-w`` for new states)."""
SETTLE_SECONDS = 2.5
"""After the run ended, how long ``-f`` still waits for lines: the run's process sends its last
batch when it exits, up to Prefect's batch interval (2 s by default) after the final state."""
_LOOKBACK_SECONDS = 5.0
_PAGE = 200
"""Logs per request (the API's default upper bound)."""


@dataclass
class _Tree:
    """The flow runs of one run (the root and every one below it) and the names of the task
    runs its lines were logged from."""

    root: UUID
    root_name: str
    dag: bool
    """Whether the root's task runs are a DAG's ops; else the one named as the root is the job
    itself (a run still going may not be known as a DAG yet: its ops are named otherwise)."""
    paths: dict[UUID, str | None] = field(default_factory=dict)
    tasks: dict[UUID, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths[self.root] = None

    def refresh(self, client: Any) -> None:
        """Add the flow runs started below the known ones since the last call."""
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

        level = list(self.paths)
        while level:
            children: list[Any] = []
            offset = 0
            while True:
                wanted = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=level))
                page = client.read_flow_runs(flow_run_filter=wanted, limit=_PAGE, offset=offset)
                children += page
                offset += _PAGE
                if len(page) < _PAGE:
                    break
            children = [child for child in children if child.id not in self.paths]
            owners = self._owners(client, [c.parent_task_run_id for c in children])
            level = []
            for child in children:
                owner = owners.get(child.parent_task_run_id)
                parent = self.paths.get(owner) if owner is not None else None
                label = (child.name or "").split(" ", 1)[0] or str(child.id)
                self.paths[child.id] = f"{parent}/{label}" if parent else label
                level.append(child.id)

    def _owners(self, client: Any, task_run_ids: list[Any]) -> dict[Any, UUID]:
        """The flow run each of ``task_run_ids`` ran in (a subflow's parent is a task run)."""
        from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterId

        ids = list({ident for ident in task_run_ids if ident is not None})
        owners: dict[Any, UUID] = {}
        for start in range(0, len(ids), _PAGE):
            found = client.read_task_runs(
                task_run_filter=TaskRunFilter(id=TaskRunFilterId(any_=ids[start : start + _PAGE])),
                limit=_PAGE,
            )
            owners.update({task.id: task.flow_run_id for task in found})
        return owners

    def name_tasks(self, client: Any, logs: list[Any]) -> None:
        """The names of the task runs of ``logs`` not known yet."""
        from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterId

        unknown = list({log.task_run_id for log in logs if log.task_run_id} - set(self.tasks))
        for start in range(0, len(unknown), _PAGE):
            ids = unknown[start : start + _PAGE]
            found = client.read_task_runs(
                task_run_filter=TaskRunFilter(id=TaskRunFilterId(any_=ids)), limit=_PAGE
            )
            self.tasks.update({task.id: task.name for task in found})

    def line(self, log: Any) -> LogLine:
        path = self.paths.get(log.flow_run_id)
        if log.task_run_id is not None:
            task = self.tasks.get(log.task_run_id)
            job = log.flow_run_id == self.root and not self.dag and task == self.root_name
            if task and not job:
                path = f"{path}/{task}" if path else task
        return LogLine(log.message, timestamp=log.timestamp, level=log.level, op=path)


def _tree(client: Any, flow_run_id: str, dag: bool) -> _Tree:
    root = client.read_flow_run(UUID(flow_run_id))
    return _Tree(root.id, root.name or "", dag)


def _logs_after(client: Any, flow_run_ids: list[UUID], after: datetime | None) -> Iterator[Any]:
    """The logs of ``flow_run_ids`` logged at or after ``after``, oldest first, page by page."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId, LogFilterTimestamp
    from prefect.client.schemas.sorting import LogSort

    wanted = LogFilter(
        flow_run_id=LogFilterFlowRunId(any_=flow_run_ids),
        timestamp=LogFilterTimestamp(after_=after) if after is not None else None,
    )
    offset = 0
    while True:
        page = client.read_logs(
            log_filter=wanted, limit=_PAGE, offset=offset, sort=LogSort.TIMESTAMP_ASC
        )
        yield from page
        if len(page) < _PAGE:
            return
        offset += _PAGE


@dataclass
class _Cursor:
    """Where a reader is in a run's logs: the newest timestamp seen, and the ids printed that
    the next read can return again (those within `_LOOKBACK_SECONDS` of it; older ones are
    forgotten, so a long ``-f`` does not grow)."""

    newest: datetime | None = None
    seen: dict[UUID, datetime] = field(default_factory=dict)

    def take(self, client: Any, tree: _Tree) -> list[LogLine]:
        after = self.newest - timedelta(seconds=_LOOKBACK_SECONDS) if self.newest else None
        logs = _logs_after(client, list(tree.paths), after)
        fresh = [log for log in logs if log.id not in self.seen]
        if not fresh:
            return []
        newest = max(log.timestamp for log in fresh)
        self.newest = max(newest, self.newest) if self.newest else newest
        horizon = self.newest - timedelta(seconds=_LOOKBACK_SECONDS)
        kept = {ident: at for ident, at in self.seen.items() if at >= horizon}
        kept.update((log.id, log.timestamp) for log in fresh if log.timestamp >= horizon)
        self.seen = kept
        tree.name_tasks(client, fresh)
        return [tree.line(log) for log in fresh]


def read_run_logs(api: str, flow_run_id: str, *, dag: bool) -> list[LogLine]:
    """Every line the API has of the run (flow run ``flow_run_id``; ``dag``: a DAG, whose
    task runs are its ops), oldest first."""
    with api_client(api) as client:
        tree = _tree(client, flow_run_id, dag)
        tree.refresh(client)
        return _Cursor().take(client, tree)


def _final_status(client: Any, flow_run_id: UUID) -> str | None:
    """The run's Polyaxon status once it ended, else None."""
    from polyaxon_prefect.prefect._states import polyaxon_status

    run = client.read_flow_run(flow_run_id)
    if run.state is None or not run.state.is_final():
        return None
    return polyaxon_status(run.state)


def follow_logs(
    api: str,
    flow_run_id: str,
    *,
    dag: bool,
    emit: Callable[[list[LogLine]], None],
    poll: float = FOLLOW_POLL_SECONDS,
) -> str:
    """Hand every line of the run to ``emit`` as it reaches the API, until the run ended and
    `SETTLE_SECONDS` passed without a new line; return its Polyaxon status."""
    with api_client(api) as client:
        tree = _tree(client, flow_run_id, dag)
        cursor = _Cursor()
        status: str | None = None
        quiet_since: float | None = None
        while True:
            if status is None:
                status = _final_status(client, tree.root)  # before the read: none is missed
                tree.refresh(client)
            lines = cursor.take(client, tree)
            if lines:
                emit(lines)
            now = time.monotonic()
            if status is not None:
                quiet_since = now if lines or quiet_since is None else quiet_since
                if now - quiet_since >= SETTLE_SECONDS:
                    return status
            time.sleep(poll)


# ----------------------------------------------------------------------------- statuses


def _changes(states: list[Any]) -> list[StatusChange]:
    """Prefect's states (or their JSON) as Polyaxon status changes, oldest first
    (`polyaxon_prefect.client.status_changes`)."""
    return status_changes([_json(state) for state in states])


def status_history(api: str, flow_run_id: str) -> list[StatusChange]:
    """The run's status changes so far (its flow run's state history through `_states`)."""
    with api_client(api) as client:
        return read_status_history(PrefectApi(client), flow_run_id)


def watch_statuses(
    api: str,
    flow_run_id: str,
    emit: Callable[[StatusChange], None],
    *,
    poll: float = FOLLOW_POLL_SECONDS,
) -> str:
    """Hand each status change to ``emit`` as it happens (the history first), until the run
    ended; return its final Polyaxon status."""
    from polyaxon_prefect.prefect._states import polyaxon_status

    shown = 0
    with api_client(api) as client:
        while True:
            run = client.read_flow_run(UUID(flow_run_id))
            changes = _changes(client.read_flow_run_states(UUID(flow_run_id)))
            for change in changes[shown:]:
                emit(change)
            shown = max(shown, len(changes))
            if run.state is not None and run.state.is_final():
                return polyaxon_status(run.state)
            time.sleep(poll)
