"""How one trial of a sweep runs: a child flow run of the sweep, in one of three ways.

- A **job** trial (the common case) is recorded as a child flow run by the sweep itself,
  named ``trial-7 lr=0.01`` with the suggestion as its parameters, under the sweep's one
  ``trials`` task run (so the UI lists it among the sweep's subflow runs). The job's process
  runs in this thread (`execute_job`); the run is created in its final state when the trial
  ends within `SHOW_RUNNING_AFTER_SECONDS` (one API call), else ``Running`` when that delay
  expires and final at the end (two calls). Prefect's flow engine would make about ten API
  calls per subflow plus its own client-side work: 130-400 ms per trial on a 2-core machine
  against a few ms of process, which was the whole cost of a sweep of short trials. Requests
  go one at a time with a quick retry on ``503`` (`api_request`). Trials are not cached: the
  study is the sweep's memory (a resumed sweep never re-runs a completed trial).
- A **DAG** trial (or any other non-job op) runs through the dispatcher as a real subflow
  (`request_flow`); a DAG is long enough that the engine's cost does not matter.
- With a **deployment**, each trial is a run of that deployment (`run_deployment`, picked up
  by a worker of its work pool, e.g. one Kubernetes pod per trial), watched through a
  `PrefectFlowRunFuture`. The deployment's entrypoint is `trial_flow` (``flows/trial.py``).

Every way returns a `TrialResult`; cancelling (pruning, early stopping) is a
``threading.Event`` the trial watches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State, StateType
from prefect.states import Failed

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._job import (
    TIMED_OUT_STATE_NAME,
    OpOutcome,
    flow_name,
    polyaxon_status,
    state_for_status,
)
from polyaxon_prefect.prefect._settings import local_run_settings
from polyaxon_prefect.runtime._masking import mask_text

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._dispatch import OpRequest
    from polyaxon_prefect.runtime._job import PreparedJob

__all__ = [
    "TRIAL_FLOW_NAME",
    "TrialResult",
    "run_deployment_trial",
    "run_job_trial",
    "run_subflow_trial",
    "trial_flow",
]

TRIAL_FLOW_NAME = "polyaxon-trial"


@dataclass(frozen=True)
class TrialResult:
    """How one trial ended."""

    status: str
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    uuid: str | None = None
    message: str = ""
    flow_run_id: str | None = None

    @classmethod
    def from_outcome(cls, outcome: OpOutcome, flow_run_id: str | None = None) -> TrialResult:
        return cls(
            status=outcome.status,
            outputs=dict(outcome.outputs),
            metrics=dict(outcome.metrics),
            uuid=outcome.uuid,
            message=outcome.message,
            flow_run_id=flow_run_id,
        )


# ----------------------------------------------------------------------------- job trials


def _job_state(job: PreparedJob, status: str, message: str) -> State:
    if status == "stopped":
        message = f"trial `{job.op_name}` was stopped: {message}"
    elif status not in ("succeeded", "skipped"):
        message = f"trial `{job.op_name}` failed: {message}"
    return state_for_status(status, message or status)


def _execute_with_retries(
    job: PreparedJob, logger: Any, cancel_event: threading.Event | None
) -> TrialResult:
    """`execute_job` with ``termination.maxRetries`` (a stopped trial is not retried)."""
    from polyaxon_prefect.prefect._job import _failure_message
    from polyaxon_prefect.runtime._job import execute_job

    def on_line(stream: str, line: str) -> None:
        (logger.warning if stream == "stderr" else logger.info)(line)

    attempts = max(int(job.max_retries or 0), 0) + 1
    result = None
    for attempt in range(attempts):
        try:
            result = execute_job(job, on_line=on_line, cancel_event=cancel_event)
        except PolyaxonPrefectError as exc:
            message = mask_text(str(exc), job.secrets)
            return TrialResult("failed", uuid=job.context.uuid, message=message)
        if result.status in ("succeeded", "skipped", "stopped"):
            break
        if cancel_event is not None and cancel_event.is_set():
            break
        if attempt + 1 < attempts:
            logger.warning("attempt %d of %d failed; retrying", attempt + 1, attempts)
    assert result is not None
    if result.status == "succeeded":
        return TrialResult(
            "succeeded",
            outputs=dict(result.outputs),
            metrics=dict(result.metrics),
            uuid=job.context.uuid,
            message="succeeded",
        )
    process = result.process
    status = result.status
    if process is not None and process.cancelled:
        status = "stopped"
    message = result.message if status == "skipped" else _failure_message(job, result)
    if process is not None and process.timed_out:
        message = message or "timed out"
    return TrialResult(status, metrics=dict(result.metrics), uuid=job.context.uuid, message=message)


_API_LOCK = threading.Lock()
_RETRYABLE = (429, 503)
_API_ATTEMPTS = 80


def api_request(client: Any, method: str, path: str, json: Any) -> Any:
    """Send one request of a trial to the Prefect API: one at a time, retried quickly when busy.

    Trials record their flow runs themselves (module docstring), from four or more threads
    at once. An SQLite-backed server answers ``503`` when a write meets another one (its
    "database is locked"), and Prefect's client then sleeps ``2 ** attempt`` seconds (even
    with its retries set to 0), which was most of a short sweep's time. Our requests go one
    at a time, so they never collide with each other, bypass that retry loop, and a ``503``/
    ``429`` (a collision with the server's own writers) is retried after a few milliseconds.
    """
    import httpx

    http = client._client
    request = http.build_request(method, path, json=json)
    if getattr(http, "enable_csrf_support", False):
        http._add_csrf_headers(request)
    delay = 0.005
    for attempt in range(_API_ATTEMPTS):
        last = attempt + 1 == _API_ATTEMPTS
        try:
            with _API_LOCK:
                response = httpx.Client.send(http, request)
        except httpx.TransportError:  # a dropped connection, a read timeout under load
            if last:
                raise
        else:
            if response.status_code not in _RETRYABLE or last:
                response.raise_for_status()
                return response
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 1.5, 0.25)
    raise AssertionError("unreachable")


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
    call costs the server a write (30-40 ms on SQLite with four trials at once on two cores),
    which is most of what a short trial costs.
    """

    def __init__(self, client: Any, create: Any, show_after: float) -> None:
        self._client = client
        self._create_action = create
        self._lock = threading.Lock()
        self._lines: list[tuple[int, str]] = []
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
        for level, line in self._lines:
            self._logger.log(level, line)
        self._lines.clear()

    def _show_running(self) -> None:
        from prefect.states import Running

        with self._lock:
            if self._finished or self.flow_run is not None:
                return
            with contextlib.suppress(Exception):  # then it is recorded at the end instead
                self._create(Running())

    def log(self, level: int, line: str) -> None:
        with self._lock:
            if self._logger is not None:
                self._logger.log(level, line)
            else:
                self._lines.append((level, line))

    def info(self, line: str, *args: Any) -> None:
        self.log(logging.INFO, line % args if args else line)

    def warning(self, line: str, *args: Any) -> None:
        self.log(logging.WARNING, line % args if args else line)

    def error(self, line: str, *args: Any) -> None:
        self.log(logging.ERROR, line % args if args else line)

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


def run_job_trial(
    job: PreparedJob,
    *,
    flow_id: UUID,
    name: str,
    parameters: Mapping[str, Any],
    tags: list[str],
    parent_task_run_id: UUID | None,
    client: Any,
    cancel_event: threading.Event | None = None,
    show_running_after: float = SHOW_RUNNING_AFTER_SECONDS,
) -> TrialResult:
    """Run one job trial as a child flow run recorded through the API (module docstring,
    `_TrialRun`), under ``parent_task_run_id`` (the sweep's ``trials`` task run).

    ``client`` is a sync Prefect client shared by the sweep's trials: a client per trial
    costs a new connection whose first request took 450 ms with four trials starting at once
    (on 2 cores, against 25 ms on a warm connection).
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
    try:
        result = _execute_with_retries(job, run, cancel_event)
    except BaseException as exc:
        run.finish(Failed(message=f"trial crashed: {exc}"))
        raise
    if result.status == "failed":
        run.error(result.message)
    state = _job_state(job, result.status, result.message)
    if result.status == "failed" and job.timeout and "timed out" in result.message:
        state = Failed(name=TIMED_OUT_STATE_NAME, message=state.message)
    flow_run_id = run.finish(state)
    return dataclasses.replace(result, flow_run_id=flow_run_id)


# ----------------------------------------------------------------------------- subflow trials


def run_subflow_trial(request: OpRequest) -> TrialResult:
    """Run a non-job trial (a DAG) as a real subflow of the current flow run."""
    from polyaxon_prefect.prefect._dispatch import request_flow

    outcomes: list[OpOutcome] = []
    child = request_flow(request, on_outcome=outcomes.append)
    with local_run_settings():
        state = child(return_state=True)
    flow_run_id = state.state_details.flow_run_id
    run_id = str(flow_run_id) if flow_run_id else None
    if outcomes:
        return TrialResult.from_outcome(outcomes[-1], run_id)
    return TrialResult(polyaxon_status(state), message=state.message or "", flow_run_id=run_id)


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
) -> TrialResult:
    """Run one trial as a run of ``deployment`` (``flow/deployment``) and wait for it.

    The idempotency key (the sweep's flow run id and the trial number) keeps a retried or
    resumed sweep from creating the same trial twice. Cancelling the event moves the run to
    ``Cancelling``: its worker stops the infrastructure (kills the process, deletes the pod).
    """
    from prefect.deployments import run_deployment
    from prefect.futures import PrefectFlowRunFuture

    flow_run = run_deployment(
        deployment,
        parameters=dict(parameters),
        timeout=0,
        idempotency_key=idempotency_key,
        flow_run_name=flow_name(name),
        tags=tags,
        as_subflow=True,
    )
    future = PrefectFlowRunFuture(flow_run_id=flow_run.id)
    cancelled = False
    while True:
        future.wait(timeout=poll_seconds)
        state = future.state
        if state.is_final():
            break
        if cancel_event is not None and cancel_event.is_set() and not cancelled:
            _cancel_flow_run(flow_run.id)
            cancelled = True
    status = polyaxon_status(state)
    payload: dict[str, Any] = {}
    if state.type == StateType.COMPLETED:
        with contextlib.suppress(Exception):  # results live where the worker stored them
            data = future.result(raise_on_failure=False)
            if isinstance(data, dict):
                payload = data
    return TrialResult(
        status=str(payload.get("status") or status),
        outputs=dict(payload.get("outputs") or {}),
        metrics=dict(payload.get("metrics") or {}),
        uuid=payload.get("uuid") or parameters.get("run_uuid"),
        message=str(payload.get("message") or state.message or status),
        flow_run_id=str(flow_run.id),
    )


@flow(name=TRIAL_FLOW_NAME, persist_result=True, validate_parameters=True)
def trial_flow(
    polyaxonfile: str,
    params: dict[str, Any] | None = None,
    presets: list[str] | None = None,
    run_uuid: str | None = None,
    index: int | None = None,
) -> dict[str, Any]:
    """One trial of a sweep, as a deployable flow: the Polyaxonfile's op (its matrix dropped)
    with ``params`` (the suggestion). Returns ``{"status", "outputs", "metrics", "uuid",
    "message"}`` (persisted, so the sweep reads it from another machine with shared result
    storage); the run's own state is the trial's."""
    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.prefect._dispatch import OpRequest, run_request_in_flow
    from polyaxon_prefect.prefect._sweep import trial_loaded
    from polyaxon_prefect.runtime import create_run_context, project_name

    values = dict(params or {})
    loaded = load_polyaxonfile(Path(polyaxonfile), list(presets or []))
    loaded = trial_loaded(loaded, values)
    name = f"{loaded.operation.name or loaded.component.name or 'op'}-trial"
    context = create_run_context(name, project_name(), run_uuid=run_uuid, iteration=index)
    outcomes: list[OpOutcome] = []
    request = OpRequest(loaded=loaded, params=values, run_context=context, in_pipeline=True)
    returned = run_request_in_flow(request, outcomes.append)
    outcome = outcomes[-1] if outcomes else OpOutcome("failed", message="the trial did not run")
    payload = {
        "status": outcome.status,
        "outputs": dict(outcome.outputs),
        "metrics": dict(outcome.metrics),
        "uuid": outcome.uuid,
        "message": outcome.message,
    }
    get_run_logger().info("trial %s: %s", index, outcome.status)
    if isinstance(returned, State) and returned.type != StateType.COMPLETED:
        return returned  # type: ignore[return-value]
    return payload
