"""One entry point for running an operation of any kind: a job, a DAG, or an op with a matrix.

Kinds nest (a DAG op can be a sweep, a sweep's trial can be a DAG), so every runner hands its
children to the same dispatcher instead of knowing about the others. An `OpRequest` says *what*
to run (the loaded operation plus the values it receives); where it runs is the current flow run
(`run_request_in_flow`) or a new one (`request_flow`, `run_request`).

``matrix`` wins over ``dag``: an op with a matrix whose component is a DAG is a sweep of DAGs.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import Flow, flow

from polyaxon_prefect.loading._load import LoadedPolyaxonfile
from polyaxon_prefect.prefect._job import (
    OpOutcome,
    OutcomeCallback,
    flow_name,
    polyaxon_status,
    run_op_in_flow,
)
from polyaxon_prefect.runtime._connections import Connection
from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._job import prepare_job
from polyaxon_prefect.runtime._kind import OpKind, op_kind

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._api import RunResult

__all__ = [
    "OpKind",
    "OpRequest",
    "SweepOptions",
    "op_kind",
    "request_flow",
    "run_request",
    "run_request_in_flow",
]


@dataclass(frozen=True)
class SweepOptions:
    """How a matrix op keeps its state and where its trials run."""

    resume: bool = False
    """Continue the latest sweep of this op (same study) instead of starting a new one."""
    storage: str | None = None
    """An Optuna storage URL or a file path; None: the local default file."""
    study_name: str | None = None
    """The study to create or resume; None: derived from the op."""
    deployment: str | None = None
    """``flow-name/deployment-name``: run each trial as a run of that deployment (a work pool)."""


@dataclass(frozen=True)
class OpRequest:
    """One operation to run, of any kind, at any depth."""

    loaded: LoadedPolyaxonfile
    """The operation with its component inlined, and its literal params (typed)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Values given on top of the file's: resolved refs, a trial's suggestion, ``-P`` values."""
    run_context: RunContext | None = None
    connections: Mapping[str, Connection] | None = None
    skip_builds: bool = False
    in_pipeline: bool = False
    """Inside a DAG or a sweep (turns Polyaxon's default cache on)."""
    base_dir: Path | None = None
    name: str | None = None
    """The run's display name (``trial-7 lr=0.01``); default: the op's name."""
    cancel_event: threading.Event | None = None
    sweep: SweepOptions = field(default_factory=SweepOptions)

    @property
    def operation(self) -> Any:
        return self.loaded.operation

    @property
    def op_name(self) -> str:
        operation = self.loaded.operation
        component = operation.component
        return str(operation.name or getattr(component, "name", None) or "op")

    def with_(self, **changes: Any) -> OpRequest:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)


def run_request_in_flow(request: OpRequest, on_outcome: OutcomeCallback | None = None) -> Any:
    """Run ``request`` inside the current flow run; return what that flow should return."""
    from polyaxon_prefect.prefect._job import track_flow_run

    kind = op_kind(request.operation)
    if kind != "job":
        track_flow_run()  # a job's flow run is tracked by `run_op_in_flow`
    if kind == "matrix":
        from polyaxon_prefect.prefect._sweep import run_sweep_in_flow

        return run_sweep_in_flow(request, on_outcome)
    if kind == "dag":
        from polyaxon_prefect.prefect._dag import run_dag_in_flow

        return run_dag_in_flow(request, on_outcome)
    job = prepare_job(
        request.loaded,
        run_context=request.run_context,
        params=request.params,
        connections=request.connections,
        in_pipeline=request.in_pipeline,
        skip_builds=request.skip_builds,
        base_dir=request.base_dir,
    )
    return run_op_in_flow(job, on_outcome, request.cancel_event)


def request_flow(
    request: OpRequest,
    *,
    name: str | None = None,
    on_outcome: OutcomeCallback | None = None,
) -> Flow[[], Any]:
    """A parameterless flow running ``request``: call it, as a top-level run or a subflow.

    ``name`` is the flow's name (default: the component's), the run is named after the request.
    """
    component = request.operation.component

    def run_operation() -> Any:
        return run_request_in_flow(request, on_outcome)

    return flow(
        run_operation,
        name=flow_name(name or getattr(component, "name", None) or request.op_name),
        flow_run_name=flow_name(request.name or request.op_name),
        description=f"Polyaxon op `{request.op_name}`",
        validate_parameters=False,
    )


def run_request(request: OpRequest, *, flow_name: str | None = None) -> RunResult:
    """Run ``request`` as a top-level flow run in this process, wait, and say how it ended."""
    from prefect import tags

    from polyaxon_prefect.prefect._api import RunResult
    from polyaxon_prefect.prefect._settings import local_run_settings

    outcomes: list[OpOutcome] = []
    op_flow = request_flow(request, name=flow_name, on_outcome=outcomes.append)
    component_tags = [str(t) for t in (getattr(request.operation, "tags", None) or []) if t]
    with local_run_settings(), tags(*component_tags):
        state = op_flow(return_state=True)
    flow_run_id = state.state_details.flow_run_id
    run_id = str(flow_run_id) if flow_run_id else None
    if outcomes:
        return RunResult.from_outcome(outcomes[-1], request.op_name, run_id)
    # The flow ended before the op reported (it crashed or was cancelled from outside).
    context = request.run_context
    return RunResult(
        status=polyaxon_status(state),
        uuid=context.uuid if context else None,
        name=request.op_name,
        artifacts_path=str(context.run_artifacts_path) if context else None,
        message=state.message or "",
        flow_run_id=run_id,
    )
