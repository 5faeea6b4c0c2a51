"""How one trial of a sweep runs: a child flow run of the sweep, in one of three ways.

- A **job** trial (the common case) is recorded as a child flow run by the sweep itself: one
  API call creates the run already ``Running`` (named ``trial-7 lr=0.01``, linked to the
  sweep through a task run, with the suggestion as its parameters), the job's process runs in
  this thread (`execute_job`, streaming its lines to the child run's logs), and one call sets
  the final state. Prefect's flow engine would make about ten API calls per subflow (an
  async client per call with its version and CSRF round trips, a lookup for an existing
  subflow, a flow lookup, two state proposals, a re-read) plus its own client-side work: on a
  2-core machine that is 130-400 ms per trial against a few ms of process, which is the whole
  cost of a sweep of short trials. The linking task run is a Prefect task (its states travel
  as events, no round trip). Trials are not cached: the study is the sweep's memory (a
  resumed sweep never re-runs a completed trial).
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
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State, StateType
from prefect.states import Cancelled, Completed, Failed

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._job import (
    SKIPPED_STATE_NAME,
    TIMED_OUT_STATE_NAME,
    OpOutcome,
    flow_name,
    polyaxon_status,
)
from polyaxon_prefect.prefect._settings import local_run_settings
from polyaxon_prefect.runtime._process import mask_secrets

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
_FINAL_STATE_RETRIES = 3
_PARENT_WAIT_SECONDS = 30.0


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
    if status == "succeeded":
        return Completed(message=message or "succeeded")
    if status == "skipped":
        return Completed(name=SKIPPED_STATE_NAME, message=message)
    if status == "stopped":
        return Cancelled(message=f"trial `{job.op_name}` was stopped: {message}")
    return Failed(message=f"trial `{job.op_name}` failed: {message}")


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
            message = mask_secrets(str(exc), job.secrets)
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


def _set_final_state(client: Any, flow_run_id: UUID, state: State) -> None:
    for attempt in range(_FINAL_STATE_RETRIES):
        try:
            client.set_flow_run_state(flow_run_id, state, force=True)
            return
        except Exception:  # a transient API error must not lose the trial's result
            if attempt + 1 == _FINAL_STATE_RETRIES:
                raise
            time.sleep(0.2 * (attempt + 1))


def _wait_for_task_run(client: Any, task_run_id: UUID | None) -> None:
    """Wait until the server knows the linking task run.

    That task run is recorded by the server from the task's events, asynchronously: a child
    flow run posted before it would be refused (its parent is a foreign key). A read is
    cheap, and the task run shows up within milliseconds.
    """
    from prefect.exceptions import ObjectNotFound

    if task_run_id is None:
        return
    delay, waited = 0.01, 0.0
    while True:
        try:
            client.read_task_run(task_run_id)
            return
        except ObjectNotFound:
            if waited > _PARENT_WAIT_SECONDS:
                raise
        time.sleep(delay)
        waited += delay
        delay = min(delay * 2, 0.25)


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
) -> TrialResult:
    """Run one job trial as a child flow run recorded through the API (module docstring),
    under ``parent_task_run_id`` (the sweep's task run for this trial).

    ``client`` is a sync Prefect client shared by the sweep's trials: a client per trial
    costs a new connection whose first request took 450 ms with four trials starting at once
    (on 2 cores, against 25 ms on a warm connection).
    """
    from prefect.client.schemas.actions import FlowRunCreate
    from prefect.client.schemas.objects import FlowRun
    from prefect.logging.loggers import flow_run_logger
    from prefect.states import Running, to_state_create

    create = FlowRunCreate(
        flow_id=flow_id,
        name=flow_name(name),
        parameters=dict(parameters),
        tags=tags,
        parent_task_run_id=parent_task_run_id,
        state=to_state_create(Running()),
    )
    _wait_for_task_run(client, parent_task_run_id)
    payload = create.model_dump(mode="json", exclude_unset=True)
    response = client.request("POST", "/flow_runs/", json=payload)
    flow_run = FlowRun.model_validate(response.json())
    logger = flow_run_logger(flow_run)
    try:
        result = _execute_with_retries(job, logger, cancel_event)
    except BaseException as exc:
        _set_final_state(client, flow_run.id, Failed(message=f"trial crashed: {exc}"))
        raise
    if result.status == "failed":
        logger.error(result.message)
    state = _job_state(job, result.status, result.message)
    if result.status == "failed" and job.timeout and "timed out" in result.message:
        state = Failed(name=TIMED_OUT_STATE_NAME, message=state.message)
    _set_final_state(client, flow_run.id, state)
    return dataclasses.replace(result, flow_run_id=str(flow_run.id))


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
    from polyaxon_prefect.runtime._context import create_run_context
    from polyaxon_prefect.runtime._job import _project_name

    values = dict(params or {})
    loaded = load_polyaxonfile(Path(polyaxonfile), list(presets or []))
    loaded = trial_loaded(loaded, values)
    name = f"{loaded.operation.name or loaded.component.name or 'op'}-trial"
    context = create_run_context(name, _project_name(), run_uuid=run_uuid, iteration=index)
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
