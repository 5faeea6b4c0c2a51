"""Runs read back from a Prefect API, in Polyaxon's terms (``ls`` and ``get``).

A run is a top-level flow run. Its Polyaxon status comes from its state (`_states`), its kind
and its params, outputs and metrics from the artifacts every run leaves (a job's table, a DAG's
markdown, a sweep's leaderboard), so nothing beyond what the UI shows is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

__all__ = ["get_run", "list_runs"]

_KINDS = (("-leaderboard", "matrix"), ("-dag", "dag"), ("-run", "job"))


@contextmanager
def _client(api: str) -> Iterator[Any]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        yield c


def _artifacts(client: Any, flow_run_id: UUID) -> list[Any]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    return list(
        client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    )


def _kind(artifacts: list[Any]) -> str:
    keys = [a.key or "" for a in artifacts if a.task_run_id is None]
    for suffix, kind in _KINDS:
        if any(key.endswith(suffix) for key in keys):
            return kind
    return "-"


def _duration(run: Any) -> str:
    seconds = run.total_run_time.total_seconds() if run.total_run_time else None
    if not seconds and run.start_time and run.end_time:
        seconds = (run.end_time - run.start_time).total_seconds()
    return f"{seconds:.1f}s" if seconds else "-"


def _status(run: Any) -> str:
    from polyaxon_prefect.prefect._states import polyaxon_status

    return str(polyaxon_status(run.state)) if run.state is not None else "created"


def _row(client: Any, run: Any) -> dict[str, Any]:
    artifacts = _artifacts(client, run.id)
    return {
        "id": str(run.id),
        "name": run.name,
        "kind": _kind(artifacts),
        "status": _status(run),
        "duration": _duration(run),
        "tags": list(run.tags or []),
    }


def list_runs(api: str, *, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest top-level runs, newest first (``status``: a Polyaxon status word)."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterParentTaskRunId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    from polyaxon_prefect.prefect._states import STATE_TYPES

    state = None
    if status is not None:
        types = list(STATE_TYPES[status])
        state = FlowRunFilterState(type=FlowRunFilterStateType(any_=types))
    with _client(api) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=True), state=state
            ),
            sort=FlowRunSort.START_TIME_DESC,
            limit=limit,
        )
        rows = [_row(client, run) for run in runs]
    if status is not None:
        rows = [row for row in rows if row["status"] == status]
    return rows


def _table(artifacts: list[Any]) -> list[dict[str, Any]]:
    for artifact in artifacts:
        if artifact.type == "table" and artifact.task_run_id is None:
            data = artifact.data
            return list(json.loads(data) if isinstance(data, str) else data or [])
    return []


def _ops(client: Any, flow_run_id: UUID) -> dict[str, str]:
    """A DAG's ops (its task runs) and their Polyaxon status, in start order."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import TaskRunSort

    from polyaxon_prefect.prefect._states import polyaxon_status

    tasks = client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
        sort=TaskRunSort.EXPECTED_START_TIME_ASC,
    )
    return {t.name: str(polyaxon_status(t.state)) for t in tasks if t.state is not None}


def get_run(api: str, run: str) -> dict[str, Any] | None:
    """One run by flow-run id or name: status, params, outputs, metrics, duration, URL."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.exceptions import ObjectNotFound

    with _client(api) as client:
        found = None
        try:
            found = client.read_flow_run(UUID(run))
        except (ValueError, ObjectNotFound):
            named = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[run])), limit=1
            )
            found = named[0] if named else None
        if found is None:
            return None
        artifacts = _artifacts(client, found.id)
        row = _row(client, found)
        ops = _ops(client, found.id) if row["kind"] == "dag" else {}
    sections: dict[str, dict[str, Any]] = {"param": {}, "output": {}, "metric": {}}
    for item in _table(artifacts):
        if item.get("kind") in sections:
            sections[item["kind"]][item["name"]] = item["value"]
    params = sections["param"] or dict(found.parameters or {})
    ui = api.rstrip("/").removesuffix("/api")
    return {
        **row,
        "message": (found.state.message if found.state else "") or "",
        "params": params,
        "outputs": sections["output"],
        "metrics": sections["metric"],
        "ops": ops,
        "url": f"{ui}/runs/flow-run/{found.id}",
    }
