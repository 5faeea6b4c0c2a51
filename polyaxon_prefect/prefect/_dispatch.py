"""The one place that knows the kinds of operation: a job, a DAG, or an op with a matrix.

Kinds nest (a DAG op can be a sweep, a sweep's trial can be a DAG), so every runner hands its
children back to this dispatcher (as `Children`) instead of knowing about the others. For each
kind it says how the op runs in the current flow run, as a DAG op, and as a sweep's trial:

======  ===========================  ==================================  ======================
kind    in the current flow run      as a DAG op                         as a trial
======  ===========================  ==================================  ======================
job     `run_op_in_flow` (one task)  a task run of the shared job task   a recorded flow run
dag     `run_dag_in_flow`            a task running the DAG as subflow   a subflow
matrix  `run_sweep_in_flow`          a task running the sweep as subflow a subflow
======  ===========================  ==================================  ======================

``matrix`` wins over ``dag``: an op with a matrix whose component is a DAG is a sweep of DAGs.
A job's run kind is looked up in the executors registry (`polyaxon_prefect.runtime`): a kind
with no executor is refused, with a problem that names it, before anything runs. The
Kubernetes executors join that registry here (`register_backends`), when a request asks for
their backend, so a local run never loads the cluster code.

`prepare_request` runs before any flow run exists and before Prefect is imported (the CLI
prepares a job, then starts its server, then imports Prefect, whose settings are read once), so
the runners and Prefect are imported where they are used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from polyaxon_prefect.prefect._request import (
    Children,
    FlowValue,
    OpRequest,
    OpTask,
    SweepOptions,
)
from polyaxon_prefect.runtime import check_gpus_up_front, run_secrets
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import LOCAL, OpKind, Status, op_kind

if TYPE_CHECKING:
    from prefect import Flow
    from prefect.client.schemas.objects import State
    from prefect.futures import PrefectFuture

    from polyaxon_prefect.prefect._job_flow import OutcomeCallback
    from polyaxon_prefect.runtime import Connection
    from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = [
    "DISPATCH",
    "OpKind",
    "OpRequest",
    "SweepOptions",
    "describe_request",
    "op_kind",
    "prepare_request",
    "register_backends",
    "request_flow",
    "run_request",
    "run_request_in_flow",
]

SUBFLOW_TASK_NAME = "run_subflow_op"

Runner = Callable[[OpRequest, "OutcomeCallback | None"], FlowValue]


def _run_job(request: OpRequest, on_outcome: OutcomeCallback | None) -> FlowValue:
    from polyaxon_prefect.prefect._job_flow import run_op_in_flow

    job = request.prepared or request.prepare_job()
    return run_op_in_flow(job, on_outcome, request.cancel_event)


def _run_dag(request: OpRequest, on_outcome: OutcomeCallback | None) -> FlowValue:
    from polyaxon_prefect.prefect._dag import run_dag_in_flow
    from polyaxon_prefect.prefect._job_flow import track_flow_run
    from polyaxon_prefect.prefect.watch._mlflow_mirror import mirror_parent

    track_flow_run()
    # with MLFLOW_TRACKING_URI set, a parent run in MLflow, its ops nested under it
    with mirror_parent(request, on_outcome) as (request, on_outcome):
        return run_dag_in_flow(request, DISPATCH, on_outcome)


def _run_sweep(request: OpRequest, on_outcome: OutcomeCallback | None) -> FlowValue:
    from polyaxon_prefect.prefect._job_flow import track_flow_run
    from polyaxon_prefect.prefect.sweep._sweep_flow import run_sweep_in_flow
    from polyaxon_prefect.prefect.watch._mlflow_mirror import mirror_parent

    track_flow_run()
    # with MLFLOW_TRACKING_URI set, a parent run in MLflow, its trials nested under it
    with mirror_parent(request, on_outcome, searched=True) as (request, on_outcome):
        return run_sweep_in_flow(request, DISPATCH, on_outcome)


_RUNNERS: dict[OpKind, Runner] = {"job": _run_job, "dag": _run_dag, "matrix": _run_sweep}
"""How each kind runs inside the current flow run (`run_request_in_flow`)."""


def register_backends(backend: str) -> None:
    """Register the executors of ``backend`` unless it is the runtime's own (``local``, and
    ``docker``, whose containers need no client library): the start-up step of every request,
    explicit rather than an import's side effect, and repeatable (a registered executor is
    registered once)."""
    if backend in (LOCAL, "docker"):
        return
    from polyaxon_prefect.prefect.kubernetes._kubernetes import register_cluster_executors
    from polyaxon_prefect.prefect.kubernetes._kubernetes_service import register_service_executors

    register_cluster_executors()
    register_service_executors()


def prepare_request(request: OpRequest) -> OpRequest:
    """``request`` ready to run: its backend's executors registered, a job prepared now (a bad
    param or an unsupported kind raises here, before any flow run exists); a DAG or a sweep
    prepares each child when it starts (a child's bad param fails that child, not the whole
    run)."""
    register_backends(request.backend)
    if request.prepared is not None:
        return request
    if op_kind(request.operation) != "job":
        if request.secrets is None:  # once, for the whole tree: a secret follows its value
            request = request.with_(secrets=run_secrets(request.operation, request.connections))
        if request.backend == LOCAL:  # a GPU request too large: once, not per trial or op
            check_gpus_up_front(request.loaded)
        return request
    return request.with_(prepared=request.prepare_job())


def describe_request(request: OpRequest) -> str:
    """The line the CLI prints when a run starts: where a job writes, or what kind runs."""
    job = request.prepared
    if job is not None:
        context = job.context
        return f"running `{job.op_name}` (run {context.uuid}) in {context.run_artifacts_path}"
    return f"running {op_kind(request.operation)} `{request.op_name}`"


def run_request_in_flow(
    request: OpRequest, on_outcome: OutcomeCallback | None = None, *, top_level: bool = False
) -> FlowValue:
    """Run ``request`` inside the current flow run; return what that flow should return.

    ``top_level``: a run of its own (not a DAG op nor a trial): it records the resolved
    operation in its run directory first (`_record`), so ``restart`` can run it again.
    The artifacts its ops made in the background exist before the flow run ends. A top-level
    flow run is watched meanwhile: cancelled from outside (``polyaxon-prefect stop``, the UI),
    its run stops and ends ``stopped`` (`polyaxon_prefect.prefect.runs._stop_watch`)."""
    from polyaxon_prefect.prefect._artifacts import flush_artifacts
    from polyaxon_prefect.prefect.runs._stop_watch import watch_root_flow_run

    register_backends(request.backend)
    seen: list[RunResult] = []
    if top_level:
        from polyaxon_prefect.prefect.runs._run_record import label_kind

        request = _recorded(request)
        label_kind(request)  # `ls` shows its kind while it runs
        on_outcome = _seen_by(seen, on_outcome)
    try:
        with watch_root_flow_run() as watch:
            value = _RUNNERS[op_kind(request.operation)](request, on_outcome)
    finally:
        flush_artifacts()
    if seen:
        _publish_record(request, seen[-1])
    if watch.cancelled and not _is_cancelled(value):  # stopped as it ended: Cancelled it is
        from polyaxon_prefect.prefect._states import state_for_status
        from polyaxon_prefect.prefect.runs._stop_watch import STOP_REASON

        return state_for_status(Status.STOPPED, f"{STOP_REASON} as it ended")
    return value


def _seen_by(seen: list[RunResult], on_outcome: OutcomeCallback | None) -> OutcomeCallback:
    def record(outcome: RunResult) -> None:
        seen.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    return record


def _publish_record(request: OpRequest, outcome: RunResult) -> None:
    """The run's record (what ``run --json`` prints) as its artifact, for ``get``/``ls``."""
    from prefect.context import FlowRunContext

    from polyaxon_prefect.prefect.runs._run_record import publish_record, run_record

    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    run_id = str(flow_run.id) if flow_run is not None else None
    # as `_result_of` names it for the caller
    record = run_record(
        outcome.with_(name=request.op_name, flow_run_id=run_id), request, reports=False
    )
    publish_record(record)


def _is_cancelled(value: FlowValue) -> bool:
    from prefect.client.schemas.objects import State

    return isinstance(value, State) and value.is_cancelled()


def _recorded(request: OpRequest) -> OpRequest:
    """``request`` with its run context made now (a DAG's or a sweep's is otherwise made by
    its runner; a job's by its prepare), after recording its operation in that run's
    directory (`polyaxon_prefect.prefect.runs._record`)."""
    from polyaxon_prefect.prefect.runs._record import record_run
    from polyaxon_prefect.runtime import new_run_context, project_name

    if op_kind(request.operation) == "job":
        request = request if request.prepared is not None else prepare_request(request)
        assert request.prepared is not None
        context = request.prepared.context
    else:
        context = request.run_context or new_run_context(request.op_name, project_name())
        request = request.with_(run_context=context.make_dirs())
    record_run(request, context)
    return request


def request_flow(
    request: OpRequest,
    *,
    name: str | None = None,
    on_outcome: OutcomeCallback | None = None,
    top_level: bool = False,
) -> Flow[[], Any]:
    """A parameterless flow running ``request``: call it, as a top-level run or a subflow.

    ``name`` is the flow's name (default: the component's), the run is named after the request;
    ``top_level``: see `run_request_in_flow`.
    """
    from prefect import flow

    from polyaxon_prefect.prefect._job_flow import flow_name
    from polyaxon_prefect.prefect._state_hooks import state_hooks

    seen: list[RunResult] = []

    def record(outcome: RunResult) -> None:
        seen.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    # Prefect evaluates a flow's annotations: `FlowValue` is a string at run time
    def run_operation() -> FlowValue:
        return run_request_in_flow(request, record, top_level=top_level)

    options: dict[str, Any] = {
        "name": flow_name(name or request.flow_name),
        "flow_run_name": flow_name(request.name or request.op_name),
        "description": f"Polyaxon op `{request.op_name}`",
        "validate_parameters": False,
        **state_hooks(request, seen, run_hook_op),  # Polyaxon `hooks`, when the op has any
    }
    return flow(**options)(run_operation)


def final_state(op_flow: Flow[[], Any]) -> State:
    """Run ``op_flow`` (a sync flow, as every flow here is) and return its final state."""
    from polyaxon_prefect.runtime.session._session import current_session

    state = cast("State", op_flow(return_state=True))
    run_id = state.state_details.flow_run_id
    if state.is_final() and run_id is not None:
        # Prefect set it on the server before returning: the reaper need not check it when
        # this process ends (a check costs the run's end a few calls to a busy server)
        current_session().flow_run_final(run_id)
    return state


def _result_of(state: State, request: OpRequest, outcomes: list[RunResult]) -> RunResult:
    """How a flow run of ``request`` ended: what its op reported, else what its state says
    (it crashed or was cancelled from outside before the op reported)."""
    from polyaxon_prefect.prefect._states import polyaxon_status

    flow_run_id = state.state_details.flow_run_id
    run_id = str(flow_run_id) if flow_run_id else None
    if outcomes:
        return outcomes[-1].with_(name=request.op_name, flow_run_id=run_id)
    context = request.run_context
    return RunResult(
        Status(polyaxon_status(state)),
        uuid=context.uuid if context else None,
        name=request.op_name,
        artifacts_path=str(context.run_artifacts_path) if context else None,
        message=state.message or "",
        flow_run_id=run_id,
    )


def run_request(
    request: OpRequest,
    *,
    flow_name: str | None = None,
    on_outcome: Callable[[RunResult], Any] | None = None,
) -> RunResult:
    """Run ``request`` as a top-level flow run in this process, wait, and say how it ended
    (``on_outcome`` hears it as soon as the op reports, before the flow run is final)."""
    from prefect import tags

    from polyaxon_prefect.prefect._settings import freeze_heap_once, local_run_settings

    freeze_heap_once()
    request = prepare_request(request)
    outcomes: list[RunResult] = []

    def record(outcome: RunResult) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    op_flow = request_flow(request, name=flow_name, on_outcome=record, top_level=True)
    job_tags = request.prepared.tags if request.prepared is not None else request.tags
    with local_run_settings(), tags(*job_tags):
        state = final_state(op_flow)
    if request.prepared is not None and request.run_context is None:
        request = request.with_(run_context=request.prepared.context)
    return _result_of(state, request, outcomes)


def run_hook_op(
    loaded: LoadedPolyaxonfile, connections: Mapping[str, Connection] | None
) -> RunResult:
    """A Polyaxon hook's op, run as a top-level flow run on the server the ended run used (the
    run that fires it is connected already)."""
    request = OpRequest(loaded=loaded, connections=connections)
    return run_request(request)  # named after the hook's component, else its op


class _SubflowOpTask:
    """A DAG op that is a nested DAG or a sweep: a task that runs it as a subflow and ends in
    the state matching the child's Polyaxon status (a subflow's own state cannot be returned
    as is)."""

    def __init__(self, request: OpRequest) -> None:
        self.request = request
        self.outcomes: list[RunResult] = []

    def submit(self, wait_for: list[PrefectFuture[Any]]) -> PrefectFuture[State]:
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        from polyaxon_prefect.prefect._job_flow import flow_name
        from polyaxon_prefect.prefect._states import polyaxon_status, state_for_status

        request, outcomes = self.request, self.outcomes

        def run_subflow_op() -> State:
            state = final_state(request_flow(request, on_outcome=outcomes.append))
            if outcomes:
                outcome = outcomes[-1]
                return state_for_status(
                    outcome.status, outcome.message or outcome.status, outcome.outputs
                )
            return state_for_status(polyaxon_status(state), state.message or "")

        runner = task(
            name=SUBFLOW_TASK_NAME,
            task_run_name=flow_name(request.name or request.op_name),
            cache_policy=NO_CACHE,
            persist_result=False,
        )(run_subflow_op)
        return runner.submit(wait_for=wait_for, return_state=False)

    def result(self, state: State) -> RunResult:
        from polyaxon_prefect.prefect._states import polyaxon_status

        context = self.request.run_context
        if self.outcomes:
            outcome = self.outcomes[-1]
            return outcome.with_(message=outcome.message or state.message or "")
        return RunResult(
            Status(polyaxon_status(state)),
            uuid=context.uuid if context else None,
            artifacts_path=str(context.run_artifacts_path) if context else None,
            message=state.message or "",
        )

    def release(self) -> None:
        pass


class _Dispatcher:
    """`Children` for every runner: the kind of each child decides how it runs."""

    def dag_op(self, request: OpRequest) -> OpTask:
        from polyaxon_prefect.prefect._job_flow import JobOpTask

        if op_kind(request.operation) == "job":
            assert request.cancel_event is not None
            return JobOpTask(request.prepare_job(), request.cancel_event)
        context = request.run_context
        if context is not None:
            request = request.with_(run_context=context.make_dirs())
        return _SubflowOpTask(request)

    def subflow(self, request: OpRequest) -> RunResult:
        from polyaxon_prefect.prefect._settings import local_run_settings

        outcomes: list[RunResult] = []
        child = request_flow(request, on_outcome=outcomes.append)
        with local_run_settings():
            state = final_state(child)
        return _result_of(state, request, outcomes)

    def runs_in_process(self, request: OpRequest) -> bool:
        return op_kind(request.operation) == "job"


DISPATCH: Children = _Dispatcher()
