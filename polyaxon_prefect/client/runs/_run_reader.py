"""Runs read back from Prefect's REST API as JSON, in Polyaxon's terms (``ls`` and ``get``):
the one reader of both ways in (the flow layer sends these requests through Prefect's client,
the thin client through `rest._http`).

A run is a flow run. Its Polyaxon status comes from its state (`_status_words`, the one mapping);
its kind from its ``polyaxon.kind`` label; the rest of its record (what ``run --json`` printed)
from the record artifact it published when it ended, and from the reports every run leaves: a
job's table, a DAG's Markdown, a sweep's leaderboard and best trial (a run still going, or one
of an older version, is read from those alone). A finished DAG's ops and a finished sweep's
trials are read from the JSON their Markdown ends with (`read_data_section`): the flow wrote it
before it ended, whereas the server records task runs' states from events, so right after a
run ends they can still be behind. Only a DAG still going (no report yet) falls back to its
task runs.

A run is named by its flow-run id, its name, or the Polyaxon run uuid that ``run`` prints (it
is in the description of the run's report). Names repeat by nature (every run of a file has
its op's name): a name means its latest run, and the record's ``note`` says how many others
have it (`name_note`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.run_files._run_paths import find_run_path
from polyaxon_prefect.client.runs._progress_label import progress_from_labels
from polyaxon_prefect.client.runs._reports import read_data_section
from polyaxon_prefect.client.runs._status_words import STATE_TYPES, status_of

__all__ = [
    "KIND_LABEL",
    "PAGE",
    "RECORD_SUFFIX",
    "artifacts_of",
    "find_run",
    "get_run",
    "list_runs",
    "name_note",
    "read_details",
    "read_record",
    "row",
    "task_ops",
]

PAGE = 200
"""Artifacts (and runs) read per request (the API's default upper bound)."""
KIND_LABEL = "polyaxon.kind"
"""The flow-run label that holds the run's kind (set when it starts)."""
RECORD_SUFFIX = "record"
"""The key suffix of a run's record artifact (`prefect._artifacts.artifact_key`)."""
_FINAL = frozenset({"COMPLETED", "FAILED", "CRASHED", "CANCELLED"})
"""Prefect's terminal state types (``State.is_final``)."""
_TOP = {"parent_task_run_id": {"is_null_": True}}
"""A flow-run filter of top-level runs (not a DAG op's or a trial's)."""


def name_note(name: str, others: int, latest: str) -> str:
    """The one line a verb says when ``others`` more runs have the ``name`` it was given and
    it took the latest (``latest``: its Polyaxon uuid, else its flow-run id)."""
    runs = "run is" if others == 1 else "runs are"
    return (
        f"{others} other {runs} named {name}; the latest is {latest} "
        f"(ls -q name:{name} to see them)"
    )


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _pages(api: Api, artifacts: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every artifact matching the ``artifacts`` filter, newest first, a page at a time."""
    offset = 0
    while True:
        body = {"artifacts": artifacts, "sort": "CREATED_DESC", "limit": PAGE, "offset": offset}
        page = api.post("/artifacts/filter", body)
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


def artifacts_of(api: Api, flow_run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The run-level artifacts (not a DAG op's) of each flow run, in one query's pages."""
    found: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in flow_run_ids}
    if not flow_run_ids:
        return found
    for artifact in _pages(api, {"flow_run_id": {"any_": flow_run_ids}}):
        if artifact.get("task_run_id") is None and artifact.get("flow_run_id") in found:
            found[artifact["flow_run_id"]].append(artifact)
    return found


def _by_uuid(api: Api, uuid: str) -> dict[str, Any] | None:
    """The flow run whose report names Polyaxon run ``uuid`` (``... (run <uuid>)``), newest
    first; None when no report does."""
    marker = f"(run {uuid})"
    for artifact in _pages(api, {"type": {"any_": ["table", "markdown"]}}):
        named = marker in (artifact.get("description") or "")
        if named and artifact.get("task_run_id") is None and artifact.get("flow_run_id"):
            # None: the flow run was deleted; its artifacts are kept
            found: dict[str, Any] | None = api.get(f"/flow_runs/{artifact['flow_run_id']}")
            return found
    return None


def _key(artifact: dict[str, Any]) -> str:
    return artifact.get("key") or ""


def _of(artifacts: list[dict[str, Any]], suffix: str) -> dict[str, Any] | None:
    """The newest run-level artifact whose key ends with ``suffix``."""
    return next((a for a in artifacts if _key(a).endswith(suffix)), None)


def _uuid(artifact: dict[str, Any] | None) -> str | None:
    """The Polyaxon run uuid a report's description names (``... (run <uuid>)``)."""
    text = (artifact.get("description") or "") if artifact is not None else ""
    head = text.rfind("(run ")
    if head < 0:
        return None
    return text[head + len("(run ") :].split(")", 1)[0] or None


def _number(text: object) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def read_record(artifacts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The record a run published (its newest ``-record`` artifact), else None (still running,
    or made by an older version)."""
    found = _of(artifacts, f"-{RECORD_SUFFIX}")
    text = found.get("data") if found is not None else None
    data = read_data_section(text) if isinstance(text, str) else None
    return data if isinstance(data, dict) else None


def _job(api: Api | None, run: dict[str, Any], artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    """A job's params, outputs, last metric values and uuid, from its table."""
    table = _of(artifacts, "-run")
    data = table.get("data") if table is not None else None
    rows = json.loads(data) if isinstance(data, str) else data or []
    sections: dict[str, dict[str, Any]] = {"param": {}, "output": {}, "metric": {}, "run": {}}
    for item in rows:
        if item.get("kind") in sections:
            sections[item["kind"]][item["name"]] = item["value"]
    return {
        "uuid": sections["run"].get("uuid") or _uuid(table),
        "params": sections["param"] or dict(run.get("parameters") or {}),
        "outputs": sections["output"],
        "metrics": {name: _number(value) for name, value in sections["metric"].items()},
        "gpu_hours": _number(sections["run"].get("gpu_hours")),
    }


def task_ops(api: Api, flow_run_id: str) -> dict[str, dict[str, Any]]:
    """A running DAG's ops from its task runs, in start order: not the task runs Prefect adds
    as a subflow's parent (a nested DAG's or a sweep's op runs it from its own task run)."""
    this = {"id": {"any_": [flow_run_id]}}
    body = {"flow_runs": this, "sort": "EXPECTED_START_TIME_ASC"}
    tasks = api.post("/task_runs/filter", body)
    children = api.post(
        "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [flow_run_id]}}}
    )
    wrappers = {child.get("parent_task_run_id") for child in children}
    return {
        task["name"]: {"status": _state_status(task["state"]), "outputs": {}}
        for task in tasks
        if task.get("state") is not None and task["id"] not in wrappers
    }


def _report(artifacts: list[dict[str, Any]], suffix: str) -> tuple[Any, Any]:
    artifact = _of(artifacts, suffix)
    text = artifact.get("data") if artifact is not None else None
    return artifact, read_data_section(text) if isinstance(text, str) else None


def _dag(api: Api | None, run: dict[str, Any], artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    """A DAG's ops (status, outputs, uuid, message) and outputs, from its report."""
    artifact, data = _report(artifacts, "-dag")
    if not isinstance(data, dict):
        ops = task_ops(api, str(run["id"])) if api is not None else {}
        return {"uuid": _uuid(artifact), "ops": ops}
    ops = data["ops"]
    return {
        "uuid": _uuid(artifact),
        "outputs": data.get("outputs") or {},
        "ops": ops,
        "gpu_hours": _gpu_hours(list(ops.values())) if isinstance(ops, dict) else None,
    }


def _sweep(api: Api | None, run: dict[str, Any], artifacts: list[dict[str, Any]]) -> dict[str, Any]:
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
    read: Callable[[Api | None, dict[str, Any], list[dict[str, Any]]], dict[str, Any]]


_REPORTS = (
    _Report("-leaderboard", "matrix", _sweep),
    _Report("-dag", "dag", _dag),
    _Report("-run", "job", _job),
)
"""The report readers, one per op shape, checked in this order: the first whose report the
run has gives its kind."""


def _shape(artifacts: list[dict[str, Any]]) -> _Report | None:
    keys = [_key(a) for a in artifacts]
    for report in _REPORTS:
        if any(key.endswith(report.suffix) for key in keys):
            return report
    return None


def _kind(run: dict[str, Any], artifacts: list[dict[str, Any]]) -> str:
    """The run's kind: its label (set as it starts: ``pytorchjob``, ``service``...), else, for
    a run of an older version, the shape of its report (``-``: none yet)."""
    labelled = (run.get("labels") or {}).get(KIND_LABEL)
    if isinstance(labelled, str) and labelled:
        return labelled
    report = _shape(artifacts)
    return report.kind if report is not None else "-"


def _final(run: dict[str, Any]) -> bool:
    state = run.get("state")
    return state is not None and state.get("type") in _FINAL


def _duration(run: dict[str, Any]) -> str:
    """How long it ran; for a run still going, how long it has been running (Prefect adds to
    ``total_run_time`` only when a run changes state, so it reads 0 until then)."""
    start, end = _time(run.get("start_time")), _time(run.get("end_time"))
    if run.get("state") is not None and not _final(run) and start is not None:
        elapsed = (datetime.now(UTC) - start).total_seconds()
        return f"{max(elapsed, 0.0):.1f}s so far"
    seconds = run.get("total_run_time") or None
    if not seconds and start and end:
        seconds = (end - start).total_seconds()
    return f"{seconds:.1f}s" if seconds else "-"


def seconds_run(run: dict[str, Any]) -> float | None:
    """How long the run ran, in seconds (None: not started); a run still going: so far."""
    start, end = _time(run.get("start_time")), _time(run.get("end_time"))
    if start is None:
        return None
    if run.get("state") is not None and not _final(run):
        return max((datetime.now(UTC) - start).total_seconds(), 0.0)
    seconds = float(run.get("total_run_time") or 0.0)
    if not seconds and end is not None:
        seconds = (end - start).total_seconds()
    return seconds


def _started(run: dict[str, Any]) -> str:
    """The run's start in this machine's local time, ``YYYY-MM-DD HH:MM:SS`` (``-``: not yet)."""
    start = _time(run.get("start_time"))
    return start.astimezone().strftime("%Y-%m-%d %H:%M:%S") if start is not None else "-"


def _state_status(state: dict[str, Any]) -> str:
    return status_of(state["type"], state.get("name"))


def _status(run: dict[str, Any]) -> str:
    state = run.get("state")
    return _state_status(state) if state is not None else "created"


def _message(run: dict[str, Any]) -> str:
    state = run.get("state")
    return (state.get("message") if state else "") or ""


def row(run: dict[str, Any], artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    """The row ``ls`` shows for a flow run (the API's JSON) with its run-level artifacts."""
    start = _time(run.get("start_time"))
    return {
        "id": str(run["id"]),
        "name": run["name"],
        "kind": _kind(run, artifacts),
        "status": _status(run),
        "message": _message(run),
        "started": _started(run),
        "start_time": start.isoformat() if start else None,
        "duration": _duration(run),
        "tags": list(run.get("tags") or []),
    }


def top_filter(status: str | None = None) -> dict[str, Any]:
    """The flow-run filter ``ls`` reads with: top-level runs, of ``status``'s state types."""
    if status is None:
        return dict(_TOP)
    return {**_TOP, "state": {"type": {"any_": list(STATE_TYPES[status])}}}


def list_runs(api: Api, *, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest top-level runs, newest first (``status``: a Polyaxon status word)."""
    wanted_runs = top_filter(status)
    runs: list[dict[str, Any]] = []
    while len(runs) < limit:  # the API answers at most `PAGE` runs a request
        wanted = min(PAGE, limit - len(runs))
        body = {
            "flow_runs": wanted_runs,
            "sort": "START_TIME_DESC",
            "limit": wanted,
            "offset": len(runs),
        }
        page = api.post("/flow_runs/filter", body)
        runs += page
        if len(page) < wanted:
            break
    artifacts = artifacts_of(api, [str(run["id"]) for run in runs])
    rows = [row(run, artifacts[str(run["id"])]) for run in runs]
    if status is not None:
        rows = [r for r in rows if r["status"] == status]
    return rows


def find_run(api: Api, ref: str) -> tuple[dict[str, Any] | None, int]:
    """The flow run ``ref`` names (its id, its name, or the Polyaxon run uuid in its report)
    and how many other runs have that name. A name is its latest top-level run (as ``ls``
    lists them), else its latest subflow run (a DAG op's, a trial's)."""
    try:
        ident: UUID | None = UUID(ref)
    except ValueError:
        ident = None
    if ident is not None:
        found = api.get(f"/flow_runs/{ident}")
        if found is not None:
            return found, 0
    name = {"name": {"any_": [ref]}}
    for wanted in ({**name, **_TOP}, name):
        # created order: a run still pending has no start time yet, and it is the latest
        body = {"flow_runs": wanted, "sort": "EXPECTED_START_TIME_DESC", "limit": 1}
        named = api.post("/flow_runs/filter", body)
        if named:
            return named[0], int(api.post("/flow_runs/count", {"flow_runs": wanted})) - 1
    return (_by_uuid(api, ident.hex) if ident is not None else None), 0


_LIVE = frozenset({"status", "name", "kind", "tags", "artifacts_path"})
"""Record fields read from the flow run as it is now (its state, name, kind label and tags)
or from this machine (its run directory), not from the record it published."""


def read_details(
    api: Api | None, run: dict[str, Any], artifacts: list[dict[str, Any]]
) -> dict[str, Any]:
    """What a run's record holds beyond `list_runs`'s row (`prefect._run_record`): the record
    it published when it ended, a DAG's ops and a sweep's trials and best from its report;
    for a run still going or one of an older version, what its report and state say. The one
    reader of ``get`` and ``ls -io``."""
    report = _shape(artifacts)
    read = report.read(api, run, artifacts) if report is not None else {}
    record = read_record(artifacts) or {}
    details = {
        "uuid": None,
        "message": _message(run),
        "params": dict(run.get("parameters") or {}),
        "outputs": {},
        "metrics": {},
        "gpu_hours": None,
        **{key: value for key, value in read.items() if value is not None or key not in record},
        **{key: value for key, value in record.items() if key not in _LIVE},
    }
    if details["uuid"] is None and report is not None:
        details["uuid"] = _uuid(_of(artifacts, report.suffix))
    return details


def get_run(api: Api, api_url: str, ref: str) -> dict[str, Any] | None:
    """One run by flow-run id, name or Polyaxon uuid (None: no such run): its record (what
    ``run --json`` printed: status, params, outputs, metrics, a DAG's ``ops`` or a sweep's
    ``trials`` and ``best``...) with its id, start, duration, URL and run directory
    (``artifacts_path``, None when it is not under this machine's artifacts root), and for a
    sweep or a job that says how far it is, its ``progress``. A name several runs have is the
    latest of them, with a ``note`` that says so.
    """
    found, others = find_run(api, ref)
    if found is None:
        return None
    run_id = str(found["id"])
    artifacts = artifacts_of(api, [run_id])[run_id]
    ui = api_url.rstrip("/").removesuffix("/api")
    shown = {
        **row(found, artifacts),
        **read_details(api, found, artifacts),
        "url": f"{ui}/runs/flow-run/{run_id}",
    }
    path = find_run_path(shown["uuid"]) if shown["uuid"] else None
    shown["artifacts_path"] = str(path) if path is not None else None
    progress = progress_from_labels(found.get("labels"), final=_final(found))
    if progress is not None:  # a sweep's or a job's, while it runs (and how it ended)
        shown["progress"] = progress
    if others:
        shown["note"] = name_note(ref, others, shown["uuid"] or shown["id"])
    return shown
