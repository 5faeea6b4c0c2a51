"""A run's record: the one object ``run --json`` prints and ``get --json``/``ls -io`` read back.

`run_record` builds it from how the run ended (`RunResult`) and what was run (`OpRequest`):
status, uuid, name, outputs, metrics (every one, even a metric named like an output),
artifacts_path, message, flow_run_id, cached, a DAG's ops or a sweep's trials and best, reason,
gpu_hours, then ``kind`` (the run kind: ``job``, ``dag``, ``matrix``, ``pytorchjob``,
``service``...), ``params`` (typed as the component's inputs declare) and the run's
``description`` and ``tags``. Values keep their JSON types: numbers stay numbers.

A top-level run publishes it when it ends (`publish_record`) as a Markdown artifact whose last
section is the record as JSON (``<op>-record``), less a DAG's ops and a sweep's trials and
best: their reports hold those already, as JSON (`polyaxon_prefect.search.read_data_section`).
`read_record` reads it back. The run's kind is also a label of its flow run from its start
(`label_kind`), so ``ls`` shows a job still running as a job and a ``pytorchjob`` as one.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.client import KIND_LABEL, RECORD_SUFFIX
from polyaxon_prefect.client import read_record as read_record_json
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.runtime.logs._masking import mask_text, mask_value
from polyaxon_prefect.search import data_section
from polyaxon_prefect.specs import record_kind

if TYPE_CHECKING:
    from uuid import UUID

    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.prefect.runs._runs import PrefectObject
    from polyaxon_prefect.runtime import PreparedJob, RunResult

__all__ = [
    "KIND_LABEL",
    "RECORD_SUFFIX",
    "job_params",
    "label_kind",
    "publish_record",
    "read_record",
    "record_params",
    "request_labels",
    "run_record",
]

_IN_REPORTS = ("ops", "trials", "best")
"""Record fields the run's report already holds (a DAG's ops, a sweep's trials and best)."""


def request_labels(request: OpRequest) -> dict[str, Any]:
    """The run's description and tags (``--description``, ``--tags`` or the file's); the tags
    are the flow run's in Prefect."""
    operation = request.operation
    tags = request.prepared.tags if request.prepared is not None else request.tags
    description = operation.description or request.component.description
    return {"description": description, "tags": list(tags)}


def job_params(job: PreparedJob) -> dict[str, Any]:
    """A job's params as it ran them (an output's placeholder left out), secrets masked."""
    outputs = {getattr(io, "name", None) for io in job.outputs}
    given = {k: v for k, v in job.params.items() if not (k in outputs and v is None)}
    return dict(mask_value(dict(sorted(given.items())), job.secrets))


def record_params(request: OpRequest) -> dict[str, Any]:
    """The run's params, typed as its component's inputs declare (secrets masked): a job's as
    it ran them (`job_params`), a DAG's or a sweep's as given."""
    from polyaxon_prefect.runtime import merge_params

    if request.prepared is not None:
        return job_params(request.prepared)
    loaded = dict(request.loaded.params or {})
    try:
        merged = merge_params(request.component, request.operation, loaded, request.params or {})
    except PolyaxonfileError:  # a sweep's matrix supplies the rest: what was given is typed
        merged = loaded
    return dict(mask_value(dict(sorted(merged.items()))))


def run_record(result: RunResult, request: OpRequest, *, reports: bool = True) -> dict[str, Any]:
    """The run's record (module docstring): what ``run --json`` prints; without ``reports``,
    less what the run's reports hold (a DAG's ops: thousands of entries that the record
    artifact leaves out anyway, `_record_markdown`)."""
    if not reports:
        result = result.with_(**dict.fromkeys(_IN_REPORTS))
    return {
        **result.to_dict(),
        "kind": record_kind(request.operation),
        "params": record_params(request),
        **request_labels(request),
    }


def _record_markdown(record: dict[str, Any], *, whole: bool = False) -> str:
    """The record artifact's Markdown; its data section holds the record less what the run's
    reports hold, or ``whole`` (a run whose reports could not be published: `_settle`)."""
    lines = [f"# {mask_text(str(record.get('name') or ''))}: {record.get('status')}", ""]
    for section in ("params", "outputs", "metrics"):
        values = record.get(section) or {}
        if values:
            lines += [f"**{section}**", ""]
            lines += [f"- `{name}`: `{value}`" for name, value in values.items()]
            lines.append("")
    stored = {k: v for k, v in record.items() if whole or k not in _IN_REPORTS}
    return "\n".join([*lines, *data_section(stored)]) + "\n"


def publish_record(record: dict[str, Any]) -> None:
    """The record as the current flow run's ``<op>-record`` artifact (best effort)."""
    from polyaxon_prefect.prefect._artifacts import artifact_key, markdown_artifact

    name = str(record.get("name") or "")
    markdown_artifact(
        _record_markdown(record),
        key=artifact_key(name, RECORD_SUFFIX),
        description=f"record of `{name}` (run {record.get('uuid')})",
    )


def read_record(artifacts: list[PrefectObject]) -> dict[str, Any] | None:
    """The record a run published (its newest ``-record`` artifact; Prefect's objects or the
    API's JSON), else None (still running, or made by an older version)."""
    from polyaxon_prefect.prefect.runs._runs import _json

    return read_record_json([_json(a) for a in artifacts])


_LABEL_NOW_ATTEMPTS = 4
"""Quick tries of the kind label at the run's start, before it goes to the background."""


def label_kind(request: OpRequest) -> None:
    """Label the current flow run with the run's kind, at its start (the label is there
    before it ends).

    It is sent now, before the run's own task runs stream in, on the engine's client: Prefect's
    labels endpoint reads the flow run, then writes it, in a deferred SQLite transaction that
    loses (``503``) to every write in between. Sent in the background while a DAG's task runs
    were being written, it lost for the whole run, and the run's end waited seconds for it
    (`prefect._artifacts.flush_artifacts`). A server still busy with another run's writes
    gets it in the background (`prefect._artifacts.in_background`), after a few quick tries."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.context import FlowRunContext

    from polyaxon_prefect.prefect._artifacts import in_background

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    flow_run_id, kind = context.flow_run.id, record_kind(request.operation)
    client = context.client if isinstance(context.client, SyncPrefectClient) else None
    if client is None or not _label(flow_run_id, kind, client, attempts=_LABEL_NOW_ATTEMPTS):
        in_background(_label, flow_run_id, kind)


def _label(
    flow_run_id: UUID, kind: str, client: Any = None, *, attempts: int | None = None
) -> bool:
    """Send the kind label (a view: False when it could not); ``client``: an open sync client,
    else a new one."""
    from prefect.client.orchestration import get_client

    from polyaxon_prefect.prefect._client import api_request

    path, labels = f"/flow_runs/{flow_run_id}/labels", {KIND_LABEL: kind}
    try:
        with contextlib.nullcontext(client) if client else get_client(sync_client=True) as open_:
            # the quick retry: the run's end waits for this label (`flush_artifacts`)
            api_request(open_, "PATCH", path, labels, attempts=attempts)
    except Exception:
        return False
    return True
