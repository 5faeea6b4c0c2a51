"""Many recorded job runs on a Prefect server, made in seconds, for ``ls -q`` tests and timing.

Running 200 real jobs would take minutes; what ``ls`` reads of a run is only its flow run
(name, tags, state, times) and its report artifact. So each run here is made through Prefect's
client API exactly as a finished job leaves it: a flow run taken through Running to its final
state, and the ``<op>-run`` table artifact a job's runner publishes (`prefect._job_flow`), with the
same rows (`runtime._job_op.job_report_rows`: ``run``/``param``/``output``/``metric`` kinds,
values with their JSON types) and the same description (``params and outputs of `op` (run
<uuid>)``). No process is started and nothing is written under the artifacts root.

Importing this module imports nothing heavy; `record_runs` imports Prefect.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecordedRun", "record_runs", "sample_runs"]


@dataclass(frozen=True)
class RecordedRun:
    """One job run to record: what its flow run and its report say."""

    name: str
    status: str = "succeeded"  # succeeded | failed | stopped
    tags: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    uuid: str = field(default_factory=lambda: _uuid.uuid4().hex)


def sample_runs(count: int) -> list[RecordedRun]:
    """``count`` varied runs: names ``resnet-N`` / ``vgg-N``, every third one failed, every
    fourth tagged ``nightly``, ``loss`` = ``(N % 10) / 10`` (0.0 to 0.9), ``lr`` params."""
    runs = []
    for n in range(count):
        runs.append(
            RecordedRun(
                name=f"{'resnet' if n % 2 == 0 else 'vgg'}-{n}",
                status="failed" if n % 3 == 0 else "succeeded",
                tags=("nightly",) if n % 4 == 0 else ("adhoc",),
                params={"lr": [0.1, 0.01, 0.001][n % 3], "arch": "resnet" if n % 2 == 0 else "vgg"},
                outputs={"accuracy": round(1 - (n % 10) / 10, 2)},
                metrics={"loss": (n % 10) / 10},
            )
        )
    return runs


def _rows(run: RecordedRun) -> list[dict[str, Any]]:
    rows = [
        {"kind": "run", "name": "status", "value": run.status},
        {"kind": "run", "name": "uuid", "value": run.uuid},
    ]
    for kind, values in (("param", run.params), ("output", run.outputs), ("metric", run.metrics)):
        rows += [{"kind": kind, "name": k, "value": v} for k, v in sorted(values.items())]
    return rows


def _record(client: Any, flow_id: Any, run: RecordedRun) -> str:
    from prefect.client.schemas.actions import ArtifactCreate, FlowRunCreate
    from prefect.states import Cancelled, Completed, Failed, Running, to_state_create

    from polyaxon_prefect.prefect._client import api_request
    from polyaxon_prefect.specs import slug

    final = {"succeeded": Completed, "failed": Failed, "stopped": Cancelled}[run.status]
    # `create_flow_run` would create (read) the flow again for every run: one request less
    create = FlowRunCreate(
        flow_id=flow_id,
        name=run.name,
        parameters=run.params,
        tags=list(run.tags),
        state=to_state_create(Running()),
    )
    body = create.model_dump(mode="json", exclude_unset=True)
    flow_run_id = str(api_request(client, "POST", "/flow_runs/", body).json()["id"])
    state = to_state_create(final()).model_dump(mode="json", serialize_as_any=True)
    api_request(
        client, "POST", f"/flow_runs/{flow_run_id}/set_state", {"state": state, "force": True}
    )
    artifact = ArtifactCreate(
        key=f"{slug(run.name, 'op')}-run",  # `prefect._artifacts.artifact_key`'s
        type="table",
        data=_rows(run),
        description=f"params and outputs of `{run.name}` (run {run.uuid})",
        flow_run_id=flow_run_id,
    )
    api_request(client, "POST", "/artifacts/", artifact.model_dump(mode="json", exclude_unset=True))
    return flow_run_id


def record_runs(api: str, runs: list[RecordedRun]) -> list[str]:
    """Record ``runs`` on the server at ``api``; their flow-run ids.

    One request at a time, each retried within milliseconds on a ``503`` (`api_request`): an
    SQLite server answers ``503`` when two writes meet, and Prefect's own client then sleeps 2,
    4, 8... seconds, and gives up after five; concurrent recording on a busy machine met that
    limit."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with (
        temporary_settings(updates={PREFECT_API_URL: api}),
        get_client(sync_client=True) as client,
    ):
        flow_id = client.create_flow_from_name("recorded-job")
        return [_record(client, flow_id, run) for run in runs]
