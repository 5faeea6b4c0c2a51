"""Runs read back from a Prefect API, in Polyaxon's terms (``ls`` and ``get``).

A run is a flow run. Its Polyaxon status comes from its state (`_states`, the one mapping);
its kind from its ``polyaxon.kind`` label; the rest of its record (what ``run --json`` printed:
`_run_record`) from the record artifact it published when it ended, and from the reports
every run leaves: a job's table, a DAG's Markdown, a sweep's leaderboard and best trial (a run
still going, or one of an older version, is read from those alone). A finished DAG's ops and
a finished sweep's trials are read from the JSON their Markdown ends with
(`read_data_section`): the flow wrote it before it ended, whereas the server records task
runs' states from events, so right after a run ends they can still be behind. Only a DAG
still going (no report yet) falls back to its task runs.

A run is named by its flow-run id, its name, or the Polyaxon run uuid that ``run`` prints (it
is in the description of the run's report). Names repeat by nature (every run of a file has
its op's name): a name means its latest run, and the record's ``note`` says how many others
have it (`name_note`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from polyaxon_prefect.prefect._progress import read_progress
from polyaxon_prefect.prefect._run_record import KIND_LABEL, read_record
from polyaxon_prefect.runtime._context import find_run_path
from polyaxon_prefect.search import read_data_section
from polyaxon_prefect.specs import Status

__all__ = ["api_client", "get_run", "list_runs", "name_note", "read_details"]

_PAGE = 200
"""Artifacts read per request (the API's default upper bound)."""


def name_note(name: str, others: int, latest: str) -> str:
    """The one line a verb says when ``others`` more runs have the ``name`` it was given and
    it took the latest (``latest``: its Polyaxon uuid, else its flow-run id)."""
    runs = "run is" if others == 1 else "runs are"
    return (
        f"{others} other {runs} named {name}; the latest is {latest} "
        f"(ls -q name:{name} to see them)"
    )


@contextmanager
def api_client(api: str) -> Iterator[Any]:
    """A sync Prefect client on the server at ``api`` (the one way the run verbs reach it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        yield c


def _pages(client: Any, artifact_filter: Any) -> Iterator[Any]:
    """Every artifact matching ``artifact_filter``, newest first, a page at a time."""
    from prefect.client.schemas.sorting import ArtifactSort

    offset = 0
    while True:
        page = client.read_artifacts(
            artifact_filter=artifact_filter,
            sort=ArtifactSort.CREATED_DESC,
            limit=_PAGE,
            offset=offset,
        )
        yield from page
        if len(page) < _PAGE:
            return
        offset += _PAGE


def _artifacts(client: Any, flow_run_ids: list[UUID]) -> dict[UUID, list[Any]]:
    """The run-level artifacts (not a DAG op's) of each flow run, in one query's pages."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    found: dict[UUID, list[Any]] = {run_id: [] for run_id in flow_run_ids}
    if not flow_run_ids:
        return found
    wanted = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=flow_run_ids))
    for artifact in _pages(client, wanted):
        if artifact.task_run_id is None and artifact.flow_run_id in found:
            found[artifact.flow_run_id].append(artifact)
    return found


def _by_uuid(client: Any, uuid: str) -> Any:
    """The flow run whose report names Polyaxon run ``uuid`` (``... (run <uuid>)``), newest
    first; None when no report does."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType
    from prefect.exceptions import ObjectNotFound

    marker = f"(run {uuid})"
    reports = ArtifactFilter(type=ArtifactFilterType(any_=["table", "markdown"]))
    for artifact in _pages(client, reports):
        named = marker in (artifact.description or "")
        if named and artifact.task_run_id is None and artifact.flow_run_id is not None:
            try:
                return client.read_flow_run(artifact.flow_run_id)
            except ObjectNotFound:  # the flow run was deleted; its artifacts are kept
                return None
    return None


def _shape(artifacts: list[Any]) -> _Report | None:
    keys = [a.key or "" for a in artifacts]
    for report in _REPORTS:
        if any(key.endswith(report.suffix) for key in keys):
            return report
    return None


def _kind(run: Any, artifacts: list[Any]) -> str:
    """The run's kind: its label (set as it starts: ``pytorchjob``, ``service``...), else, for
    a run of an older version, the shape of its report (``-``: none yet)."""
    labelled = (getattr(run, "labels", None) or {}).get(KIND_LABEL)
    if isinstance(labelled, str) and labelled:
        return labelled
    report = _shape(artifacts)
    return report.kind if report is not None else "-"


def _duration(run: Any) -> str:
    """How long it ran; for a run still going, how long it has been running (Prefect adds to
    ``total_run_time`` only when a run changes state, so it reads 0 until then)."""
    if run.state is not None and not run.state.is_final() and run.start_time is not None:
        from datetime import UTC, datetime

        elapsed = (datetime.now(UTC) - run.start_time).total_seconds()
        return f"{max(elapsed, 0.0):.1f}s so far"
    seconds = run.total_run_time.total_seconds() if run.total_run_time else None
    if not seconds and run.start_time and run.end_time:
        seconds = (run.end_time - run.start_time).total_seconds()
    return f"{seconds:.1f}s" if seconds else "-"


def _started(run: Any) -> str:
    """The run's start in this machine's local time, ``YYYY-MM-DD HH:MM:SS`` (``-``: not yet)."""
    start = run.start_time
    return start.astimezone().strftime("%Y-%m-%d %H:%M:%S") if start is not None else "-"


def _status(run: Any) -> str:
    from polyaxon_prefect.prefect._states import polyaxon_status

    return str(polyaxon_status(run.state)) if run.state is not None else Status.CREATED


def _row(run: Any, artifacts: list[Any]) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "name": run.name,
        "kind": _kind(run, artifacts),
        "status": _status(run),
        "message": (run.state.message if run.state else "") or "",
        "started": _started(run),
        "start_time": run.start_time.isoformat() if run.start_time else None,
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
    top = FlowRunFilter(parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=True), state=state)
    runs: list[Any] = []
    with api_client(api) as client:
        while len(runs) < limit:  # the API answers at most `_PAGE` runs a request
            wanted = min(_PAGE, limit - len(runs))
            page = client.read_flow_runs(
                flow_run_filter=top,
                sort=FlowRunSort.START_TIME_DESC,
                limit=wanted,
                offset=len(runs),
            )
            runs += page
            if len(page) < wanted:
                break
        artifacts = _artifacts(client, [run.id for run in runs])
    rows = [_row(run, artifacts[run.id]) for run in runs]
    if status is not None:
        rows = [row for row in rows if row["status"] == status]
    return rows


def _find(client: Any, ref: str) -> tuple[Any, int]:
    """The flow run ``ref`` names (its id, its name, or the Polyaxon run uuid in its report)
    and how many other runs have that name. A name is its latest top-level run (as ``ls``
    lists them), else its latest subflow run (a DAG op's, a trial's)."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        FlowRunFilterParentTaskRunId,
    )
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.exceptions import ObjectNotFound

    try:
        ident: UUID | None = UUID(ref)
    except ValueError:
        ident = None
    if ident is not None:
        try:
            return client.read_flow_run(ident), 0
        except ObjectNotFound:
            pass
    name = FlowRunFilterName(any_=[ref])
    top = FlowRunFilterParentTaskRunId(is_null_=True)
    for wanted in (FlowRunFilter(name=name, parent_task_run_id=top), FlowRunFilter(name=name)):
        # created order: a run still pending has no start time yet, and it is the latest
        named = client.read_flow_runs(
            flow_run_filter=wanted, sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=1
        )
        if named:
            return named[0], client.count_flow_runs(flow_run_filter=wanted) - 1
    return (_by_uuid(client, ident.hex) if ident is not None else None), 0


def _of(artifacts: list[Any], suffix: str) -> Any:
    """The newest run-level artifact whose key ends with ``suffix``."""
    return next((a for a in artifacts if (a.key or "").endswith(suffix)), None)


def _uuid(artifact: Any) -> str | None:
    """The Polyaxon run uuid a report's description names (``... (run <uuid>)``)."""
    text = (artifact.description or "") if artifact is not None else ""
    head = text.rfind("(run ")
    if head < 0:
        return None
    return text[head + len("(run ") :].split(")", 1)[0] or None


def _number(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _job(client: Any, run: Any, artifacts: list[Any]) -> dict[str, Any]:
    """A job's params, outputs, last metric values and uuid, from its table."""
    table = _of(artifacts, "-run")
    data = table.data if table is not None else None
    rows = json.loads(data) if isinstance(data, str) else data or []
    sections: dict[str, dict[str, Any]] = {"param": {}, "output": {}, "metric": {}, "run": {}}
    for item in rows:
        if item.get("kind") in sections:
            sections[item["kind"]][item["name"]] = item["value"]
    return {
        "uuid": sections["run"].get("uuid") or _uuid(table),
        "params": sections["param"] or dict(run.parameters or {}),
        "outputs": sections["output"],
        "metrics": {name: _number(value) for name, value in sections["metric"].items()},
        "gpu_hours": _number(sections["run"].get("gpu_hours")),
    }


def _task_ops(client: Any, flow_run_id: UUID) -> dict[str, dict[str, Any]]:
    """A running DAG's ops from its task runs, in start order: not the task runs Prefect adds
    as a subflow's parent (a nested DAG's or a sweep's op runs it from its own task run)."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
    )
    from prefect.client.schemas.sorting import TaskRunSort

    from polyaxon_prefect.prefect._states import polyaxon_status

    this = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    tasks = client.read_task_runs(flow_run_filter=this, sort=TaskRunSort.EXPECTED_START_TIME_ASC)
    children = client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])
        )
    )
    wrappers = {child.parent_task_run_id for child in children}
    return {
        task.name: {"status": str(polyaxon_status(task.state)), "outputs": {}}
        for task in tasks
        if task.state is not None and task.id not in wrappers
    }


def _report(artifacts: list[Any], suffix: str) -> tuple[Any, Any]:
    artifact = _of(artifacts, suffix)
    text = artifact.data if artifact is not None else None
    return artifact, read_data_section(text) if isinstance(text, str) else None


def _dag(client: Any, run: Any, artifacts: list[Any]) -> dict[str, Any]:
    """A DAG's ops (status, outputs, uuid, message) and outputs, from its report."""
    artifact, data = _report(artifacts, "-dag")
    if not isinstance(data, dict):
        return {"uuid": _uuid(artifact), "ops": _task_ops(client, run.id)}
    ops = data["ops"]
    return {
        "uuid": _uuid(artifact),
        "outputs": data.get("outputs") or {},
        "ops": ops,
        "gpu_hours": _gpu_hours(list(ops.values())) if isinstance(ops, dict) else None,
    }


def _sweep(client: Any, run: Any, artifacts: list[Any]) -> dict[str, Any]:
    """A sweep's trials and best trial (as ``run --json`` has them), from its report, and
    which value of the metric ranks them (``ranked_by``)."""
    artifact, data = _report(artifacts, "-best")
    data = data if isinstance(data, dict) else {}
    best = data.get("best")
    return {
        "uuid": _uuid(artifact),
        "outputs": (best or {}).get("outputs") or {},
        "metrics": (best or {}).get("metrics") or {},
        "metric": data.get("metric"),
        # which value of each trial's metric ranks them: "last" or "best over steps"
        "ranked_by": data.get("ranked_by") or ("last" if data.get("metric") else None),
        "trials": data.get("trials") or [],
        "best": best,
        "gpu_hours": _gpu_hours(data.get("trials") or []),
    }


def _gpu_hours(trials: list[dict[str, Any]]) -> float | None:
    """A sweep's GPU-hours: its trials' sum, a DAG's its ops' (None when none held a GPU)."""
    hours = [t["gpu_hours"] for t in trials if isinstance(t.get("gpu_hours"), int | float)]
    return round(sum(hours), 6) if hours else None


@dataclass(frozen=True)
class _Report:
    """One op shape as `ls` and `get` see it: the suffix of the report artifact its runner
    publishes (`prefect._artifacts`), the kind shown for it, and how its details are read."""

    suffix: str
    kind: str
    read: Callable[[Any, Any, list[Any]], dict[str, Any]]


_REPORTS = (
    _Report("-leaderboard", "matrix", _sweep),
    _Report("-dag", "dag", _dag),
    _Report("-run", "job", _job),
)
"""The report readers, one per op shape, checked in this order: the first whose report the
run has gives its kind."""


_LIVE = frozenset({"status", "name", "kind", "tags", "artifacts_path"})
"""Record fields read from the flow run as it is now (its state, name, kind label and tags)
or from this machine (its run directory), not from the record it published."""


def read_details(client: Any, run: Any, artifacts: list[Any]) -> dict[str, Any]:
    """What a run's record holds beyond `list_runs`'s row (`prefect._run_record`): the record
    it published when it ended, a DAG's ops and a sweep's trials and best from its report;
    for a run still going or one of an older version, what its report and state say. The one
    reader of ``get`` and ``ls -io``."""
    report = _shape(artifacts)
    read = report.read(client, run, artifacts) if report is not None else {}
    record = read_record(artifacts) or {}
    details = {
        "uuid": None,
        "message": (run.state.message if run.state else "") or "",
        "params": dict(run.parameters or {}),
        "outputs": {},
        "metrics": {},
        "gpu_hours": None,
        **{key: value for key, value in read.items() if value is not None or key not in record},
        **{key: value for key, value in record.items() if key not in _LIVE},
    }
    if details["uuid"] is None and report is not None:
        details["uuid"] = _uuid(_of(artifacts, report.suffix))
    return details


def get_run(api: str, run: str) -> dict[str, Any] | None:
    """One run by flow-run id, name or Polyaxon uuid (None: no such run): its record (what
    ``run --json`` printed: status, params, outputs, metrics, a DAG's ``ops`` or a sweep's
    ``trials`` and ``best``...) with its id, start, duration, URL and run directory
    (``artifacts_path``, None when it is not under this machine's artifacts root), and for a
    sweep or a job that says how far it is, its ``progress`` (`_progress.read_progress`). A name
    several runs have is the latest of them, with a ``note`` that says so.
    """
    with api_client(api) as client:
        found, others = _find(client, run)
        if found is None:
            return None
        artifacts = _artifacts(client, [found.id])[found.id]
        row = _row(found, artifacts)
        details = read_details(client, found, artifacts)
    ui = api.rstrip("/").removesuffix("/api")
    shown = {**row, **details, "url": f"{ui}/runs/flow-run/{found.id}"}
    path = find_run_path(shown["uuid"]) if shown["uuid"] else None
    shown["artifacts_path"] = str(path) if path is not None else None
    progress = read_progress(found)
    if progress is not None:  # a sweep's or a job's, while it runs (and how it ended)
        shown["progress"] = progress
    if others:
        shown["note"] = name_note(run, others, shown["uuid"] or shown["id"])
    return shown
