"""How one trial of a sweep runs: a child flow run of the sweep, in one of three ways.

- A **job** trial (the common case) is recorded as a child flow run by the sweep itself,
  named ``trial-7 lr=0.01`` with the suggestion as its parameters, under the sweep's one
  ``trials`` task run (so the UI lists it among the sweep's subflow runs). The job's process
  runs in this thread (`execute_job`); the run is created in its final state when the trial
  ends within `SHOW_RUNNING_AFTER_SECONDS` (one API call), else ``Running`` when that delay
  expires and final at the end (two calls). Prefect's flow engine would make about ten API
  calls per subflow plus its own client-side work, many times what a short trial's process
  costs: that was the whole cost of a sweep of short trials. Requests
  go one at a time with a quick retry on ``503`` (`polyaxon_prefect.prefect._client`). Trials
  are not cached: the study is the sweep's memory (a resumed sweep never re-runs a completed
  trial).
- A **DAG** trial (or any other non-job op) runs through the dispatcher as a real subflow
  (`Children.subflow`); a DAG is long enough that the engine's cost does not matter.
- With a **deployment**, each trial is a run of that deployment (`run_deployment`, picked up
  by a worker of its work pool, e.g. one Kubernetes pod per trial), watched through a
  `PrefectFlowRunFuture`. The deployment's entrypoint is `polyaxon_prefect.prefect.trial_flow`
  (``flows/trial.py``).

Every way returns a `RunResult`; cancelling (pruning, early stopping) is a
``threading.Event`` the trial watches.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, StateType
from prefect.states import Completed, Failed

from polyaxon_prefect.prefect._client import api_request
from polyaxon_prefect.prefect._job_flow import JOB_LINE, flow_name
from polyaxon_prefect.prefect._states import polyaxon_status, state_for_result
from polyaxon_prefect.prefect.kubernetes._gpu_wait import GPU_WAIT_STATE_NAME
from polyaxon_prefect.prefect.server._server_watch import ResultInHand
from polyaxon_prefect.prefect.watch._mlflow_mirror import mirrors_job_trial
from polyaxon_prefect.runtime._job_op import execute_job_op, retries
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.actions import FlowRunCreate

    from polyaxon_prefect.runtime._prepared import PreparedJob
    from polyaxon_prefect.specs import Component

__all__ = [
    "TRIAL_FLOW_NAME",
    "end_trials_task_run",
    "run_deployment_trial",
    "run_job_trial",
    "trial_flow_id",
    "trials_task_run",
]

TRIAL_FLOW_NAME = "polyaxon-trial"


# ----------------------------------------------------------------------------- job trials


def _state_payload(state: State, flow_run_id: UUID) -> dict[str, Any]:
    from uuid import uuid4

    from prefect.states import to_state_create

    create = to_state_create(state)
    create.state_details.flow_run_id = flow_run_id
    create.state_details.transition_id = uuid4()
    return {"state": create.model_dump(mode="json", serialize_as_any=True), "force": True}


SHOW_RUNNING_AFTER_SECONDS = 1.0
"""A job trial still running after this long gets its flow run created ``Running``; a shorter
one is recorded once, directly in its final state (see `_TrialRun`)."""


class _TrialRun:
    """The child flow run of one job trial, created as late as the UI allows.

    A trial that lasts less than `SHOW_RUNNING_AFTER_SECONDS` is recorded with one API call,
    created directly in its final state (Prefect sets its start and end time), its lines
    buffered until then; a longer one is created ``Running`` when the delay expires (by a
    timer, so the UI shows it while it runs) and gets its final state at the end. Each API
    call costs the server a write (SQLite writes one at a time), which is most of what a
    short trial costs.
    """

    def __init__(self, client: SyncPrefectClient, create: FlowRunCreate, show_after: float) -> None:
        self._client = client
        self._create_action = create
        self._lock = threading.Lock()
        self._lines: list[tuple[int, str, dict[str, str]]] = []
        self._finished = False
        self.flow_run: Any = None
        self._logger: Any = None
        self._timer = threading.Timer(show_after, self._show_running)
        self._timer.daemon = True
        self._timer.start()

    def _create(self, state: State) -> None:
        from prefect.client.schemas.objects import FlowRun
        from prefect.logging.loggers import flow_run_logger
        from prefect.states import to_state_create

        create = self._create_action.model_copy(update={"state": to_state_create(state)})
        payload = create.model_dump(mode="json", exclude_unset=True)
        response = api_request(self._client, "POST", "/flow_runs/", payload)
        self.flow_run = FlowRun.model_validate(response.json())
        self._logger = flow_run_logger(self.flow_run)
        for level, line, extra in self._lines:
            self._logger.log(level, line, extra=extra)
        self._lines.clear()

    def _show_running(self) -> None:
        from prefect.states import Running

        with self._lock:
            if self._finished or self.flow_run is not None:
                return
            with contextlib.suppress(Exception):  # then it is recorded at the end instead
                self._create(Running())

    def log(self, level: int, line: str, stream: str | None = None) -> None:
        """Log ``line``; ``stream``: it is the job's own output line (`JOB_LINE`)."""
        extra = {JOB_LINE: stream} if stream else {}
        with self._lock:
            if self._logger is not None:
                self._logger.log(level, line, extra=extra)
            else:
                self._lines.append((level, line, extra))

    def info(self, line: str, *args: object) -> None:
        self.log(logging.INFO, line % args if args else line)

    def warning(self, line: str, *args: object) -> None:
        self.log(logging.WARNING, line % args if args else line)

    def error(self, line: str, *args: object) -> None:
        self.log(logging.ERROR, line % args if args else line)

    def waiting(self, reason: str) -> None:
        """The trial waits for GPUs: its flow run ``Pending`` with ``reason`` (created so,
        when it does not exist yet), the reason a line of its log."""
        from prefect.states import Pending

        self.info(reason)
        self._set_or_create(Pending(name=GPU_WAIT_STATE_NAME, message=reason))

    def started(self) -> None:
        """The trial has its GPUs: ``Running`` again."""
        from prefect.states import Running

        self._set_or_create(Running(message="got its GPUs"))

    def _set_or_create(self, state: State) -> None:
        with self._lock:
            if self._finished:
                return
            with contextlib.suppress(Exception):  # shown at the end instead
                if self.flow_run is None:
                    self._create(state)
                else:
                    path = f"/flow_runs/{self.flow_run.id}/set_state"
                    payload = _state_payload(state, self.flow_run.id)
                    api_request(self._client, "POST", path, payload)

    def finish(self, state: State) -> str:
        """Record ``state`` as the run's final state; returns the flow run's id."""
        self._timer.cancel()
        with self._lock:
            self._finished = True
            if self.flow_run is None:
                self._create(state)
            else:
                path = f"/flow_runs/{self.flow_run.id}/set_state"
                api_request(self._client, "POST", path, _state_payload(state, self.flow_run.id))
            return str(self.flow_run.id)


@mirrors_job_trial  # with MLFLOW_TRACKING_URI set, mirrored as it runs
def run_job_trial(
    job: PreparedJob,
    *,
    flow_id: UUID,
    name: str,
    parameters: Mapping[str, Any],
    tags: list[str],
    parent_task_run_id: UUID | None,
    client: SyncPrefectClient,
    cancel_event: threading.Event | None = None,
    show_running_after: float = SHOW_RUNNING_AFTER_SECONDS,
    on_result: Callable[[RunResult], None] | None = None,
) -> RunResult:
    """Run one job trial as a child flow run recorded through the API (module docstring,
    `_TrialRun`), under ``parent_task_run_id`` (the sweep's ``trials`` task run).

    ``client`` is a sync Prefect client shared by the sweep's trials: a client per trial
    costs a new connection whose first request is many times slower than one on a warm
    connection when several trials start at once.
    ``on_result`` gets the job's result as soon as its process ends, before the records that
    need the server (a sweep writes it to its study there).
    """
    from prefect.client.schemas.actions import FlowRunCreate

    create = FlowRunCreate(
        flow_id=flow_id,
        name=flow_name(name),
        parameters=dict(parameters),
        tags=tags,
        parent_task_run_id=parent_task_run_id,
    )
    run = _TrialRun(client, create, show_running_after)

    def on_line(stream: str, line: str) -> None:
        run.log(logging.WARNING if stream == "stderr" else logging.INFO, line, stream)

    def on_retry(attempt: int, attempts: int) -> None:
        run.warning("attempt %d of %d failed; retrying", attempt, attempts)

    waited: list[str] = []
    # the CLI whose server went away waits until the study knows how this trial ended
    in_hand = ResultInHand()

    def on_wait(reason: str) -> None:
        in_hand.release()  # a trial waiting for GPUs is not one to wait for
        waited.append(reason)
        run.waiting(reason)

    def on_start(_job: PreparedJob) -> None:
        if waited:
            run.started()
        in_hand.hold()

    in_hand.hold()
    try:
        result = _with_retries(job, on_line, cancel_event, on_retry, (on_wait, on_start))
    except BaseException as exc:
        in_hand.release()  # its record below waits on the server: not to be waited for
        run.finish(Failed(message=f"trial crashed: {exc}"))
        raise
    try:
        if on_result is not None:
            on_result(result)
    finally:
        in_hand.release()
    if result.status == Status.FAILED:
        run.error(result.message)
    state = state_for_result(result, prefix=_prefix(job, result))
    return result.with_(flow_run_id=run.finish(state))


def _with_retries(
    job: PreparedJob,
    on_line: Callable[[str, str], None],
    cancel_event: threading.Event | None,
    on_retry: Callable[[int, int], None],
    gpu_callbacks: tuple[Callable[[str], None], Callable[[PreparedJob], None]] | None = None,
) -> RunResult:
    """The trial's attempts: ``termination.maxRetries`` more while it fails (`retries`, the
    count Prefect's task retries apply to a job op), never after a stop."""
    attempts = retries(job) + 1
    on_wait, on_start = gpu_callbacks or (None, None)
    for attempt in range(1, attempts):
        result = execute_job_op(
            job, on_line=on_line, cancel_event=cancel_event, on_wait=on_wait, on_start=on_start
        )
        stopped = cancel_event is not None and cancel_event.is_set()
        if result.status != Status.FAILED or stopped:
            return result
        on_retry(attempt, attempts)
    return execute_job_op(
        job, on_line=on_line, cancel_event=cancel_event, on_wait=on_wait, on_start=on_start
    )


def _prefix(job: PreparedJob, result: RunResult) -> str:
    if result.status == Status.STOPPED:
        return f"trial `{job.op_name}` was stopped: "
    return f"trial `{job.op_name}` failed: "


# ----------------------------------------------------------------------------- the sweep's records


def _trials_body() -> None:
    """Never called: the task whose one run per sweep is the parent of its trial flow runs."""


_TRIALS_TASK = task(name="trials", cache_policy=NO_CACHE, persist_result=False)(_trials_body)


def trials_task_run(client: SyncPrefectClient, flow_run_id: UUID | None) -> UUID | None:
    """One task run of the sweep, created ``Running`` through the API, that every job trial's
    child flow run hangs under (so the UI lists the trials as the sweep's subflow runs).

    One per sweep, not one per trial: a task run per trial made each trial wait for the
    server to record it from its events before its flow run could name it as parent (404s
    while polling), and doubled the writes that contend for the server's
    database (SQLite answered ``503`` under four concurrent trials, and the client's retry
    back-off cost seconds).

    Sent with `api_request` (a quick retry on ``503``): it meets the sweep's first progress
    writes, and Prefect's client slept 2 s on that collision before the first trial started.
    """
    from prefect.client.schemas.actions import TaskRunCreate
    from prefect.states import Running, to_state_create

    if flow_run_id is None:
        return None
    create = TaskRunCreate(
        name="trials",
        flow_run_id=flow_run_id,
        task_key=_TRIALS_TASK.task_key,
        dynamic_key="trials",
        state=to_state_create(Running()),
    )
    payload = create.model_dump(mode="json", exclude={"id"})
    return UUID(api_request(client, "POST", "/task_runs/", payload).json()["id"])


def end_trials_task_run(client: SyncPrefectClient, task_run_id: UUID | None, state: State) -> None:
    if task_run_id is None:
        return
    final = state if isinstance(state, State) else Completed()
    with contextlib.suppress(Exception):  # a view: the sweep's own state is what matters
        client.set_task_run_state(task_run_id, final.model_copy(update={"data": None}), force=True)


def trial_flow_id(client: SyncPrefectClient, component: Component | None, op_name: str) -> UUID:
    """The id of the flow the trial runs belong to (the component's name, like a job's), asked
    on the sweep's open client (a new client costs a connection) with a quick retry."""
    from prefect.client.schemas.actions import FlowCreate

    name = flow_name(getattr(component, "name", None) or op_name)
    payload = FlowCreate(name=name).model_dump(mode="json")
    return UUID(api_request(client, "POST", "/flows/", payload).json()["id"])


# ----------------------------------------------------------------------------- deployments


def _cancel_flow_run(flow_run_id: UUID) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelling

    with contextlib.suppress(Exception), get_client(sync_client=True) as client:
        client.set_flow_run_state(flow_run_id, Cancelling(message="stopped by the sweep"))


def run_deployment_trial(
    deployment: str,
    *,
    parameters: Mapping[str, Any],
    name: str,
    idempotency_key: str,
    tags: list[str],
    cancel_event: threading.Event | None = None,
    poll_seconds: float = 1.0,
) -> RunResult:
    """Run one trial as a run of ``deployment`` (``flow/deployment``) and wait for it.

    The idempotency key (the sweep's flow run id and the trial number) keeps a retried or
    resumed sweep from creating the same trial twice. Cancelling the event moves the run to
    ``Cancelling``: its worker stops the infrastructure (kills the process, deletes the pod).
    """
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment
    from prefect.futures import PrefectFlowRunFuture

    flow_run: FlowRun = run_deployment(  # type: ignore[assignment]  # sync here
        deployment,
        parameters=dict(parameters),
        timeout=0,
        idempotency_key=idempotency_key,
        flow_run_name=flow_name(name),
        tags=tags,
        as_subflow=True,
    )
    future: PrefectFlowRunFuture[Any] = PrefectFlowRunFuture(flow_run_id=flow_run.id)
    cancelled = False
    while True:
        future.wait(timeout=poll_seconds)
        state = future.state
        if state.is_final():
            break
        if cancel_event is not None and cancel_event.is_set() and not cancelled:
            _cancel_flow_run(flow_run.id)
            cancelled = True
    status = Status(polyaxon_status(state))
    payload: dict[str, Any] = {}
    if state.type == StateType.COMPLETED:
        with contextlib.suppress(Exception):  # results live where the worker stored them
            data = future.result(raise_on_failure=False)
            if isinstance(data, dict):
                payload = data
    return RunResult(
        status=Status(payload.get("status") or status),
        outputs=dict(payload.get("outputs") or {}),
        metrics=dict(payload.get("metrics") or {}),
        uuid=payload.get("uuid") or parameters.get("run_uuid"),
        message=str(payload.get("message") or state.message or status),
        flow_run_id=str(flow_run.id),
    )
