"""Many recorded job runs on a Prefect server, made in seconds, for ``ls -q`` tests and timing.

Running 200 real jobs would take minutes; what ``ls`` reads of a run is only its flow run
(name, tags, state, times) and its report artifact. So each run here is made through Prefect's
client API exactly as a finished job leaves it: a flow run taken through Running to its final
state, and the ``<op>-run`` table artifact a job's runner publishes (`prefect._job`), with the
same rows (`runtime._job_op.job_report_rows`: ``run``/``param``/``output``/``metric`` kinds,
values with their JSON types) and the same description (``params and outputs of `op` (run
<uuid>)``). No process is started and nothing is written under the artifacts root.

Importing this module imports nothing heavy; `record_runs` imports Prefect.
"""

from __future__ import annotations

import asyncio
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


async def _record(client: Any, flow_id: Any, run: RecordedRun, gate: asyncio.Semaphore) -> str:
    from prefect.client.schemas.actions import ArtifactCreate, FlowRunCreate
    from prefect.client.schemas.objects import FlowRun
    from prefect.states import Cancelled, Completed, Failed, Running, to_state_create

    from polyaxon_prefect.specs import slug

    final = {"succeeded": Completed, "failed": Failed, "stopped": Cancelled}[run.status]
    async with gate:
        # `create_flow_run` would create (read) the flow again for every run: one request less
        create = FlowRunCreate(
            flow_id=flow_id,
            name=run.name,
            parameters=run.params,
            tags=list(run.tags),
            state=to_state_create(Running()),
        )
        response = await client.request(
            "POST", "/flow_runs/", json=create.model_dump(mode="json", exclude_unset=True)
        )
        flow_run = FlowRun.model_validate(response.json())
        await client.set_flow_run_state(flow_run.id, final(), force=True)
        await client.create_artifact(
            ArtifactCreate(
                key=f"{slug(run.name, 'op')}-run",  # `prefect._artifacts.artifact_key`'s
                type="table",
                data=_rows(run),
                description=f"params and outputs of `{run.name}` (run {run.uuid})",
                flow_run_id=flow_run.id,
            )
        )
    return str(flow_run.id)


async def _record_all(api: str, runs: list[RecordedRun], concurrency: int) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    gate = asyncio.Semaphore(concurrency)
    with temporary_settings(updates={PREFECT_API_URL: api}):
        async with get_client() as client:
            flow_id = await client.create_flow_from_name("recorded-job")
            return list(await asyncio.gather(*(_record(client, flow_id, r, gate) for r in runs)))


def record_runs(api: str, runs: list[RecordedRun], *, concurrency: int = 4) -> list[str]:
    """Record ``runs`` on the server at ``api``; their flow-run ids. A few at a time: more only
    make a SQLite server answer 503, and the client wait."""
    return asyncio.run(_record_all(api, runs, concurrency))
