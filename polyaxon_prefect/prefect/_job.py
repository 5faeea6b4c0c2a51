"""One job operation as one Prefect flow run holding one task run (``run_job_op``).

The flow is the unit users see (named after the op, tagged like the component, with a table
artifact of params and outputs); the task is the unit Prefect retries and caches. The job itself
(command, env, timeout kill, outputs) is `polyaxon_prefect.runtime.execute_job`: this module only
maps it onto Prefect states.

Two things are deliberately kept out of Prefect's hands:

- The prepared job never becomes a flow or task *parameter*: its env holds connection secrets,
  and flow parameters are stored by the API and shown in the UI. The task closes over it.
- The timeout is enforced by killing the process (``execute_job``), not by ``timeout_seconds``:
  Prefect cannot interrupt a thread blocked on a child process.

How a job ends, as the task's state (returned, not raised, so the message is the job's own and
no Python traceback of ours is printed; Prefect retries a returned failed state like an error):

==========================  =====================================  ======================
job                         Prefect state                          Polyaxon status
==========================  =====================================  ======================
exit 0, outputs valid       Completed (``Cached`` on a cache hit)  succeeded
skipped build               Completed named ``Skipped``            skipped
killed at the deadline      Failed named ``TimedOut``              failed
cancelled                   Cancelled                              stopped
anything else               Failed                                 failed
==========================  =====================================  ======================
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import Flow, Task, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, StateType
from prefect.context import FlowRunContext
from prefect.states import Cancelled, Completed, Failed
from prefect.types import BANNED_CHARACTERS

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._settings import install_log_filter
from polyaxon_prefect.runtime._cache import CacheHit, RunCache
from polyaxon_prefect.runtime._job import JobResult, PreparedJob, execute_job, prepare_job
from polyaxon_prefect.runtime._masking import mask_text, mask_value
from polyaxon_prefect.runtime._session import current_session

__all__ = [
    "SKIPPED_STATE_NAME",
    "TIMED_OUT_STATE_NAME",
    "UPSTREAM_FAILED_STATE_NAME",
    "OpOutcome",
    "flow_name",
    "job_flow",
    "job_task",
    "job_task_options",
    "polyaxon_status",
    "run_op_in_flow",
    "state_for_status",
]

SKIPPED_STATE_NAME = "Skipped"
UPSTREAM_FAILED_STATE_NAME = "UpstreamFailed"
TIMED_OUT_STATE_NAME = "TimedOut"
CACHED_STATE_NAME = "Cached"
TASK_NAME = "run_job_op"
_TAIL_LINES = 10

install_log_filter()


@dataclass(frozen=True)
class OpOutcome:
    """What one op's flow run produced, handed to in-process callers (`run`, the CLI).

    ``uuid``/``artifacts_path`` are those of the run that produced the outputs: on a cache hit,
    the earlier run's (nothing was written for the new one).
    """

    status: str
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    uuid: str | None = None
    artifacts_path: str | None = None
    cached: bool = False
    ops: dict[str, Any] | None = None
    """A DAG's ops: ``{name: {"status", "outputs", "uuid", ...}}``."""
    trials: list[dict[str, Any]] | None = None
    """A sweep's trials: ``[{"index", "params", "status", "outputs", "uuid", ...}]``."""
    best: dict[str, Any] | None = None
    """A sweep's best trial (same shape as an entry of ``trials``)."""
    reason: str = ""
    """Why a DAG or a sweep ended early (early stopping), empty otherwise."""


OutcomeCallback = Callable[[OpOutcome], None]


def polyaxon_status(state: State) -> str:
    """Polyaxon's status word for a final Prefect state."""
    if state.type == StateType.COMPLETED:
        return "skipped" if state.name == SKIPPED_STATE_NAME else "succeeded"
    if state.type == StateType.CANCELLED:
        return "upstream_failed" if state.name == UPSTREAM_FAILED_STATE_NAME else "stopped"
    return "failed"


def state_for_status(status: str, message: str, data: Any = None) -> State:
    """A new final state for a Polyaxon status (the inverse of `polyaxon_status`), for a task
    or flow run (a job, a DAG op's marker, a sweep, a trial) to end in.

    ``data`` is kept only on ``succeeded``; every other status is a named or typed state
    carrying ``message``.
    """
    if status == "succeeded":
        return Completed(message=message, data=data)
    if status == "skipped":
        return Completed(name=SKIPPED_STATE_NAME, message=message)
    if status == "upstream_failed":
        return Cancelled(name=UPSTREAM_FAILED_STATE_NAME, message=message)
    if status == "stopped":
        return Cancelled(message=message)
    return Failed(message=message)


def flow_name(name: str) -> str:
    """``name`` without the characters Prefect refuses in flow and run names."""
    cleaned = "".join("-" if ch in BANNED_CHARACTERS else ch for ch in name).strip()
    return cleaned or "polyaxon-op"


def _artifact_key(op_name: str) -> str:
    # Artifact keys: lowercase letters, digits and dashes only.
    slug = re.sub(r"[^a-z0-9-]+", "-", op_name.lower()).strip("-")
    return f"{slug or 'op'}-run"


# ----------------------------------------------------------------------------- the task


def _payload(job: PreparedJob, result: JobResult) -> dict[str, Any]:
    return {
        "outputs": dict(result.outputs),
        "metrics": dict(result.metrics),
        "uuid": job.context.uuid,
        "artifacts_path": str(job.context.run_artifacts_path),
    }


def _cache_hit(job: PreparedJob) -> CacheHit | None:
    """The succeeded run this job may reuse, when its cache is on (`RunCache`)."""
    if job.cache_key is None:
        return None
    return RunCache.under(job.context.artifacts_root).lookup(job.cache_key, job.cache_ttl)


def _cache_store(job: PreparedJob, payload: dict[str, Any]) -> None:
    """Remember a *succeeded* run for its cache key (nothing else is ever stored)."""
    if job.cache_key is None:
        return
    try:
        RunCache.under(job.context.artifacts_root).store(
            job.cache_key,
            uuid=payload["uuid"],
            outputs=payload["outputs"],  # data for the ops downstream of a hit: not masked
            metrics=mask_value(payload["metrics"], job.secrets),
            artifacts_path=payload["artifacts_path"],
        )
    except OSError as exc:  # a cache is an optimisation: never fail the op for it
        get_run_logger().warning("could not record the run in the cache: %s", exc)


def _failure_message(job: PreparedJob, result: JobResult) -> str:
    """The job's own message, or one built from how its process ended and its last stderr."""
    message = result.message.strip()
    process = result.process
    if not message and process is not None:
        message = f"the process {process.describe()}"
        tail = process.stderr_tail[-_TAIL_LINES:]
        if tail:
            message += "; last lines of stderr:\n" + "\n".join(tail)
    for problem in result.problems:
        if getattr(problem, "message", str(problem)) not in message:
            message += f"\n{problem.format() if hasattr(problem, 'format') else problem}"
    return mask_text(message or f"job `{job.op_name}` failed", job.secrets)


def _execute(
    job: PreparedJob, cancel_event: threading.Event | None = None
) -> dict[str, Any] | State:
    """The body of ``run_job_op``: run the process, stream its lines, map how it ended.

    ``cancel_event`` stops the process when set (early stopping, pruning): the job ends
    ``stopped``.
    """
    logger = get_run_logger()

    def on_line(stream: str, line: str) -> None:
        # Lines arrive masked; Prefect's console handler echoes them to the terminal.
        if stream == "stderr":
            logger.warning(line)
        else:
            logger.info(line)

    hit = _cache_hit(job)
    if hit is not None:
        message = (
            f"cache hit: reused the outputs of run {hit.uuid} (same op and params, succeeded); "
            "no process was started"
        )
        payload = {
            "outputs": hit.outputs,
            "metrics": hit.metrics,
            "uuid": hit.uuid,
            "artifacts_path": hit.artifacts_path,
            "cached": True,
        }
        return Completed(name=CACHED_STATE_NAME, message=message, data=payload)
    try:
        result = execute_job(job, on_line=on_line, cancel_event=cancel_event)
    except PolyaxonPrefectError as exc:  # command not found, bad outputs file, ...
        return Failed(message=mask_text(str(exc), job.secrets))
    if result.status == "succeeded":
        payload = _payload(job, result)
        _cache_store(job, payload)
        return payload
    if result.status == "skipped":
        return Completed(name=SKIPPED_STATE_NAME, message=result.message or "skipped")
    message = _failure_message(job, result)
    process = result.process
    if process is not None and process.timed_out:
        return Failed(name=TIMED_OUT_STATE_NAME, message=message)
    if result.status == "stopped" or (process is not None and process.cancelled):
        return Cancelled(message=message)
    return Failed(message=message)


def job_task(job: PreparedJob, cancel_event: threading.Event | None = None) -> Task[[], Any]:
    """``run_job_op`` for this job: retries from ``termination.maxRetries``.

    The op cache is not Prefect's (see `polyaxon_prefect.runtime._cache`): the body looks the
    job's cache key up among succeeded runs and, on a hit, returns their payload in a
    ``Cached`` state without starting a process.
    """

    def run_job_op() -> dict[str, Any] | State:
        return _execute(job, cancel_event)

    options = job_task_options(job)
    options["task_run_name"] = flow_name(job.op_name)
    return task(run_job_op, **options)


def job_task_options(job: PreparedJob) -> dict[str, Any]:
    """The task options a job's run needs: retries from ``termination.maxRetries`` and its tags.

    Prefect's task cache is always off (``NO_CACHE``, results not persisted): it would store a
    returned failed state like a success. The caller adds the run name.
    """
    return {
        "name": TASK_NAME,
        "retries": max(int(job.max_retries or 0), 0),
        "tags": list(job.tags),
        "cache_policy": NO_CACHE,
        "persist_result": False,
    }


# ----------------------------------------------------------------------------- the flow


def _add_flow_run_tags(tags: tuple[str, ...]) -> None:
    """Give the current flow run the component's tags, however the run was created (a
    deployment, the UI, `to_flow`...): tags only come from context when a run is created."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None or not tags:
        return
    current = list(context.flow_run.tags or [])
    missing = [t for t in tags if t not in current]
    if not missing:
        return
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.update_flow_run(context.flow_run.id, tags=[*current, *missing])


def track_flow_run() -> None:
    """Tell the session's reaper about the current flow run, so that it is marked crashed if
    this process is killed before the run is final (see `polyaxon_prefect.runtime._session`)."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    from prefect.settings import get_current_settings

    session = current_session()
    api_url = get_current_settings().api.url or _ephemeral_api_url()
    if api_url:
        session.track_api(str(api_url))
    session.track_flow_run(context.flow_run.id)


def _ephemeral_api_url() -> str | None:
    """The API URL of the ephemeral server Prefect started in this process, if any (Prefect
    keeps it on a class; read defensively, it is not a public API)."""
    try:
        from prefect.server.api.server import SubprocessASGIServer
    except ImportError:
        return None
    instances = getattr(SubprocessASGIServer, "_instances", {}) or {}
    for server in instances.values():
        if getattr(server, "running", False) and getattr(server, "port", None):
            return str(server.api_url)
    return None


def _cell(value: Any, secrets: tuple[str, ...]) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return mask_text(text, secrets)


def _table_artifact(job: PreparedJob, outcome: OpOutcome) -> None:
    """Params, outputs and metrics of the run as one table (secrets masked)."""
    from prefect.artifacts import create_table_artifact

    output_names = {getattr(io, "name", None) for io in job.outputs}
    rows: list[dict[str, str]] = [
        {"kind": "run", "name": "status", "value": outcome.status},
        {"kind": "run", "name": "uuid", "value": outcome.uuid or job.context.uuid},
    ]
    if job.image:
        rows.append({"kind": "run", "name": "image", "value": job.image})
    for name, value in sorted(job.params.items()):
        if name in output_names and value is None:
            continue  # an output's placeholder, not an input value
        rows.append({"kind": "param", "name": name, "value": _cell(value, job.secrets)})
    for name, value in sorted(outcome.outputs.items()):
        rows.append({"kind": "output", "name": name, "value": _cell(value, job.secrets)})
    for name, value in sorted(outcome.metrics.items()):
        if name not in outcome.outputs:
            rows.append({"kind": "metric", "name": name, "value": _cell(value, job.secrets)})
    create_table_artifact(
        rows,
        key=_artifact_key(job.op_name),
        description=f"params and outputs of `{job.op_name}` (run {outcome.uuid})",
    )


def _remove_if_empty(path: Path) -> None:
    """Drop a run directory that never got a file (the new run of a cache hit)."""
    if not path.is_dir() or any(p.is_file() for p in path.rglob("*")):
        return
    for directory in sorted((p for p in path.rglob("*") if p.is_dir()), reverse=True):
        os.rmdir(directory)
    os.rmdir(path)


def run_op_in_flow(
    job: PreparedJob,
    on_outcome: OutcomeCallback | None = None,
    cancel_event: threading.Event | None = None,
) -> Any:
    """Run ``job`` as the task of the current flow run; return what the flow should return.

    That is the outputs dict on success, else a final state (``Skipped``, ``Failed``,
    ``TimedOut``, ``Cancelled``) carrying the job's message, which Prefect makes the flow run's
    own state.
    """
    logger = get_run_logger()
    track_flow_run()
    _add_flow_run_tags(job.tags)
    for note in getattr(job, "notes", ()):
        logger.warning(note)
    if job.is_build:
        message = (
            f"skipped build op `{job.op_name}`: the local runtime has no image builder "
            f"(image {job.image or '-'} was not built)"
        )
        logger.warning(message)
        outcome = OpOutcome(
            "skipped",
            message=message,
            uuid=job.context.uuid,
            artifacts_path=str(job.context.run_artifacts_path),
        )
        _finish(job, outcome, on_outcome)
        return Completed(name=SKIPPED_STATE_NAME, message=message)

    state = job_task(job, cancel_event)(return_state=True)
    if state.type == StateType.COMPLETED and state.name != SKIPPED_STATE_NAME:
        payload = state.result()
        cached = state.name == CACHED_STATE_NAME
        message = "succeeded"
        if cached:
            message = (
                f"cache hit: reused the outputs of run {payload.get('uuid')} "
                "(same op and params); no process was started"
            )
            logger.info(message)
            _remove_if_empty(job.context.run_path)
        outcome = OpOutcome(
            "succeeded",
            outputs=dict(payload.get("outputs") or {}),
            metrics=dict(payload.get("metrics") or {}),
            message=message,
            uuid=payload.get("uuid") or job.context.uuid,
            artifacts_path=payload.get("artifacts_path"),
            cached=cached,
        )
        _finish(job, outcome, on_outcome)
        if cached:  # the flow run says so too, and still returns the outputs
            return Completed(name=CACHED_STATE_NAME, message=message, data=outcome.outputs)
        return outcome.outputs

    status = polyaxon_status(state)
    message = state.message or status
    outcome = OpOutcome(
        status,
        message=message,
        uuid=job.context.uuid,
        artifacts_path=str(job.context.run_artifacts_path),
    )
    _finish(job, outcome, on_outcome)
    if status == "skipped":
        return state_for_status(status, message)
    if status == "stopped":
        return state_for_status(status, f"op `{job.op_name}` was stopped: {message}")
    name = TIMED_OUT_STATE_NAME if state.name == TIMED_OUT_STATE_NAME else "Failed"
    return Failed(name=name, message=f"op `{job.op_name}` failed: {message}")


def _finish(job: PreparedJob, outcome: OpOutcome, on_outcome: OutcomeCallback | None) -> None:
    try:
        _table_artifact(job, outcome)
    except Exception as exc:  # an artifact is a view: never fail the op for it
        get_run_logger().warning("could not create the table artifact: %s", exc)
    if on_outcome is not None:
        on_outcome(outcome)


def job_flow(
    job: PreparedJob | Any,
    *,
    name: str | None = None,
    on_outcome: OutcomeCallback | None = None,
    **prepare_kwargs: Any,
) -> Flow[[], Any]:
    """A parameterless flow that runs one op: call it (``return_state=True`` for the state).

    ``job`` is a `PreparedJob`, or a loaded Polyaxonfile that is prepared here, now (so invalid
    params or unsupported features raise before any flow run exists); ``prepare_kwargs`` go to
    `prepare_job` (``run_context``, ``params``, ``connections``, ``skip_builds``, ...).
    ``name`` is the flow's name (the component's name groups its runs in the UI; defaults to
    the component's name for a loaded file, else the op's name); each flow run is named after
    the op. ``on_outcome`` receives the `OpOutcome` at the end of the run, in this process.
    """
    if not isinstance(job, PreparedJob):
        name = name or getattr(getattr(job, "component", None), "name", None)
        job = prepare_job(job, **prepare_kwargs)
    elif prepare_kwargs:
        raise TypeError("prepare_kwargs only apply when `job` is a loaded Polyaxonfile")
    prepared: PreparedJob = job

    def run_op() -> Any:
        return run_op_in_flow(prepared, on_outcome)

    return flow(
        run_op,
        name=flow_name(name or prepared.op_name),
        flow_run_name=flow_name(prepared.op_name),
        description=f"Polyaxon op `{prepared.op_name}`",
        validate_parameters=False,
    )
