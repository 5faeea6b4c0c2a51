"""One job operation as one Prefect flow run holding one task run (``run_job_op``).

The flow is the unit users see (named after the op, tagged like the component, with a table
artifact of params and outputs); the task is the unit Prefect retries. The op itself (cache,
process, timeout kill, outputs) is `polyaxon_prefect.runtime.execute_job_op`, the same for a
top-level job, a DAG op and a sweep trial; its `RunResult` becomes the task's state through
the one mapping in `polyaxon_prefect.prefect._states`.

Two things are deliberately kept out of Prefect's hands:

- The prepared job never becomes a flow or task *parameter*: its env holds connection secrets,
  and flow parameters are stored by the API and shown in the UI. The task closes over it.
- The timeout is enforced by killing the process (``execute_job``), not by ``timeout_seconds``:
  Prefect cannot interrupt a thread blocked on a child process.

A failed job's state is returned, not raised, so the message is the job's own and no Python
traceback of ours is printed; Prefect retries a returned failed state like an error.
Prefect's task cache is always off: it would store a returned failed state like a success (the
op cache is ours, `polyaxon_prefect.runtime.cache._run_cache`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import Flow, Task, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, StateType
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.types import BANNED_CHARACTERS

from polyaxon_prefect.prefect._artifacts import (
    artifact_key,
    in_background,
    markdown_artifact,
    table_artifact,
)
from polyaxon_prefect.prefect._client import api_request, ephemeral_api_url, result_value
from polyaxon_prefect.prefect._settings import install_log_filter
from polyaxon_prefect.prefect._states import (
    CACHED_STATE_NAME,
    SKIPPED_STATE_NAME,
    TIMED_OUT_STATE_NAME,
    UPSTREAM_FAILED_STATE_NAME,
    polyaxon_status,
    state_for_result,
    state_for_status,
)
from polyaxon_prefect.prefect.kubernetes._gpu_wait import gpu_wait_callbacks
from polyaxon_prefect.prefect.watch._metric_charts import chart_markdown
from polyaxon_prefect.prefect.watch._mlflow_mirror import mirror_job
from polyaxon_prefect.prefect.watch._progress_publish import watch_job_progress
from polyaxon_prefect.runtime import run_metric_history
from polyaxon_prefect.runtime._job_op import (
    cache_hit_line,
    execute_job_op,
    job_report_rows,
    retries,
    table_says_more,
)
from polyaxon_prefect.runtime._one_process import PreparedJob, prepare_job
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.session._session import current_session
from polyaxon_prefect.specs import LoadedPolyaxonfile, Status

__all__ = [
    "CACHED_STATE_NAME",
    "JOB_LINE",
    "SKIPPED_STATE_NAME",
    "TIMED_OUT_STATE_NAME",
    "UPSTREAM_FAILED_STATE_NAME",
    "OutcomeCallback",
    "flow_name",
    "job_flow",
    "job_task",
    "job_task_options",
    "polyaxon_status",
    "run_job_op_body",
    "run_op_in_flow",
    "state_for_status",
    "task_result",
    "track_flow_run",
]

TASK_NAME = "run_job_op"
JOB_LINE = "polyaxon_job_line"
"""The log record attribute a job's own output line carries (its stream): `run -l` shows
exactly those."""

OutcomeCallback = Callable[[RunResult], None]

install_log_filter()


def flow_name(name: str) -> str:
    """``name`` without the characters Prefect refuses in flow and run names."""
    cleaned = "".join("-" if ch in BANNED_CHARACTERS else ch for ch in name).strip()
    return cleaned or "polyaxon-op"


# ----------------------------------------------------------------------------- the task


def run_job_op_body(
    job: PreparedJob, cancel_event: threading.Event | None = None, *, report: bool = False
) -> RunResult | State:
    """The body of ``run_job_op``: the op (`run_op_in_task`), its result as the task's state
    (`task_return`)."""
    return task_return(run_op_in_task(job, cancel_event, report=report))


def task_return(result: RunResult) -> RunResult | State:
    """What a job's task returns for ``result``: the `RunResult` itself on success (Prefect
    makes it ``Completed``), else its final state (which Prefect retries when it failed)."""
    if result.succeeded and not result.cached:
        return result
    return state_for_result(result, data=result)


def run_op_in_task(
    job: PreparedJob, cancel_event: threading.Event | None = None, *, report: bool = False
) -> RunResult:
    """One attempt of the op (`execute_job_op`), its lines streamed to the task run's log.

    ``report``: the op's params, outputs and metrics table goes on this task run (a DAG's op;
    a job run alone gets it on its flow run, `run_op_in_flow`)."""
    logger = get_run_logger()

    def on_line(stream: str, line: str) -> None:
        # Lines arrive masked; Prefect's console handler echoes them to the terminal. The
        # `extra` marks them as the job's own (`run -l` shows those, not Prefect's notes).
        if stream == "stderr":
            logger.warning(line, extra={JOB_LINE: stream})
        else:
            logger.info(line, extra={JOB_LINE: stream})

    on_wait, on_start = gpu_wait_callbacks(job, logger, task=report)
    if report:  # a DAG op (a job run alone logs them on its flow run, `job_flow`)
        for note in job.notes:  # e.g. why it is not cached (its folder is over the budget)
            logger.warning(note)
    with mirror_job(job) as mirrored:  # with MLFLOW_TRACKING_URI set, mirrored as it runs
        result = execute_job_op(
            job, on_line=on_line, cancel_event=cancel_event, on_wait=on_wait, on_start=on_start
        )
        mirrored(result)
    if report:
        rows = job_report_rows(job, result)
        # a table that only repeats the task run's state and the uuid the DAG's report
        # holds is not written; the rest goes off the op's path: its downstream op need not
        # wait for the API (`in_background`)
        if table_says_more(rows):
            in_background(_report, job, result, rows, keyed=False)
    return result


def task_result(state: State, job: PreparedJob) -> RunResult:
    """How the finished task run of ``job`` ended (its `RunResult`, read without a copy)."""
    if state.type == StateType.COMPLETED and state.name != SKIPPED_STATE_NAME:
        value = result_value(state)
        if isinstance(value, RunResult):
            return value
    status = Status(polyaxon_status(state))
    return RunResult(
        status,
        uuid=job.context.uuid,
        name=job.op_name,
        artifacts_path=str(job.context.run_artifacts_path),
        message=state.message or str(status),
        timed_out=state.name == TIMED_OUT_STATE_NAME,
    )


def job_task(job: PreparedJob, cancel_event: threading.Event | None = None) -> Task[[], Any]:
    """``run_job_op`` for this job: retries from ``termination.maxRetries``."""

    def run_job_op() -> RunResult | State:
        return run_job_op_body(job, cancel_event)

    options = job_task_options(job)
    options["task_run_name"] = flow_name(job.op_name)
    return task(run_job_op, **options)


def job_task_options(job: PreparedJob) -> dict[str, Any]:
    """The task options a job's run needs: retries from ``termination.maxRetries`` and its tags.

    Prefect's task cache is always off (``NO_CACHE``, results not persisted). The caller adds
    the run name.
    """
    return {
        "name": TASK_NAME,
        "retries": retries(job),
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
        tagged = {"tags": [*current, *missing]}
        api_request(client, "PATCH", f"/flow_runs/{context.flow_run.id}", tagged)


def track_flow_run() -> None:
    """Tell the session's reaper about the current flow run, so that it is marked crashed if
    this process is killed before the run is final (see
    `polyaxon_prefect.runtime.session._session`)."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    from prefect.settings import get_current_settings

    session = current_session()
    api_url = get_current_settings().api.url or ephemeral_api_url()
    if api_url:
        session.track_api(str(api_url))
    session.track_flow_run(context.flow_run.id)


def _remove_if_empty(path: Path) -> None:
    """Drop a run directory that never got a file (the new run of a cache hit)."""
    if not path.is_dir() or any(p.is_file() for p in path.rglob("*")):
        return
    for directory in sorted((p for p in path.rglob("*") if p.is_dir()), reverse=True):
        os.rmdir(directory)
    os.rmdir(path)


def _skipped_build(job: PreparedJob) -> RunResult:
    message = (
        f"skipped build op `{job.op_name}`: the local runtime has no image builder "
        f"(image {job.image or '-'} was not built)"
    )
    get_run_logger().warning(message)
    return RunResult(
        Status.SKIPPED,
        uuid=job.context.uuid,
        name=job.op_name,
        message=message,
        artifacts_path=str(job.context.run_artifacts_path),
    )


def run_op_in_flow(
    job: PreparedJob,
    on_outcome: OutcomeCallback | None = None,
    cancel_event: threading.Event | None = None,
) -> dict[str, Any] | State:
    """Run ``job`` as the task of the current flow run; return what the flow should return.

    That is the outputs dict on success, else a final state (``Skipped``, ``Failed``,
    ``TimedOut``, ``Cancelled``) carrying the job's message, which Prefect makes the flow run's
    own state.
    """
    logger = get_run_logger()
    track_flow_run()
    _add_flow_run_tags(job.tags)
    for note in job.notes:
        logger.warning(note)
    if job.is_build:
        result = _skipped_build(job)
        _finish(job, result, on_outcome)
        return state_for_result(result)
    # the job's `log_progress` calls, published while it runs (a job alone: a DAG's op or a
    # sweep's trial is shown by its DAG's or sweep's progress)
    with watch_job_progress(job.op_name, job.context.run_outputs_path, job.context.uuid):
        state = job_task(job, cancel_event)(return_state=True)
    result = task_result(state, job)
    if result.cached:
        message = cache_hit_line(job, result.uuid)
        logger.info(message)
        _remove_if_empty(job.context.run_path)
        result = result.with_(message=message)
    elif result.succeeded:
        result = result.with_(message=str(Status.SUCCEEDED))
    _finish(job, result, on_outcome)
    if result.succeeded and not result.cached:
        return result.outputs
    # the flow run says so too, and a cache hit still returns the outputs
    return state_for_result(result, data=result.outputs, prefix=_prefix(job, result))


def _prefix(job: PreparedJob, result: RunResult) -> str:
    if result.status == Status.STOPPED:
        return f"op `{job.op_name}` was stopped: "
    return f"op `{job.op_name}` failed: "


def _report(
    job: PreparedJob,
    result: RunResult,
    rows: list[dict[str, Any]] | None = None,
    *,
    keyed: bool = True,
) -> None:
    """The op's params and outputs table (``rows``: `job_report_rows`, made by the caller),
    and its metrics chart when it logged metrics: one background call per DAG op (one place
    in the bounded queue, one thread hand-off).

    ``keyed``: the table is ``<op>-run`` (a job run alone: ``get`` reads it by that key). A
    DAG op's has no key: it is on the op's task run, named by its description; a key costs
    the server an upsert of Prefect's artifact collection, a read back and an event of its
    own on every write, about as much as the artifact itself."""
    description = f"params and outputs of `{job.op_name}` (run {result.uuid})"
    rows = job_report_rows(job, result) if rows is None else rows
    key = artifact_key(job.op_name, "run") if keyed else None
    table_artifact(rows, key=key, description=description)
    _metrics_chart(job, result)


def _metrics_chart(job: PreparedJob, result: RunResult) -> None:
    """The run's metric history as a Markdown artifact (``<op>-metrics``): a chart of each of
    its main metrics and a table of all, when a metric has two points or more (a cache hit's
    run ran no process: its table says whose outputs it reused)."""
    if result.cached or result.uuid not in (None, job.context.uuid):
        return
    try:
        history = run_metric_history(job.context.run_path)
    except OSError:
        return
    title = f"metrics of `{job.op_name}`"
    markdown = chart_markdown(title, history)
    if markdown is not None:
        description = f"metric history of `{job.op_name}` (run {job.context.uuid})"
        markdown_artifact(
            markdown, key=artifact_key(job.op_name, "metrics"), description=description
        )


def _finish(job: PreparedJob, result: RunResult, on_outcome: OutcomeCallback | None) -> None:
    # The outcome first: it is known before the report reaches the API (a CLI whose server
    # went away ends with it instead of waiting on the report).
    if on_outcome is not None:
        on_outcome(result)
    _report(job, result)


def job_flow(
    job: PreparedJob | LoadedPolyaxonfile,
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
    the op. ``on_outcome`` receives the `RunResult` at the end of the run, in this process.
    """
    if not isinstance(job, PreparedJob):
        name = name or (job.component.name if job.component is not None else None)
        job = prepare_job(job, **prepare_kwargs)
    elif prepare_kwargs:
        raise TypeError("prepare_kwargs only apply when `job` is a loaded Polyaxonfile")
    prepared: PreparedJob = job

    def run_op() -> dict[str, Any] | State:
        return run_op_in_flow(prepared, on_outcome)

    return flow(
        name=flow_name(name or prepared.op_name),
        flow_run_name=flow_name(prepared.op_name),
        description=f"Polyaxon op `{prepared.op_name}`",
        validate_parameters=False,
    )(run_op)


# ----------------------------------------------------------------------------- DAG job ops

_JOBS: dict[str, JobOpTask] = {}
_JOB_TASKS: dict[tuple[Any, ...], Task[..., Any]] = {}
_JOB_TASKS_LOCK = threading.Lock()


def run_job_op(name: str, run: str) -> RunResult | State:
    """The body of a DAG job op's task run: ``name`` names the task run (the op), ``run`` is
    the op's run uuid, the key of its `JobOpTask` (never a parameter: its job's env has
    secrets). Each attempt's result is kept on the `JobOpTask`, which hands it to the DAG."""
    op = _JOBS[run]
    op.outcome = None  # an attempt that crashes must not leave an earlier one's result
    op.outcome = run_op_in_task(op.job, op.cancel, report=True)
    return task_return(op.outcome)


def _shared_job_task(job: PreparedJob) -> Task[..., Any]:
    """One task object per distinct set of options, shared by the ops of every DAG run.

    A task object per op (`job_task`) would do the same, but building one costs Prefect an
    ``inspect.getsource`` (file stats and tokenizing) on the scheduler's thread: a few
    milliseconds per op, most of the scheduler's own overhead on a DAG of short jobs.
    """
    key = (retries(job), tuple(job.tags))
    with _JOB_TASKS_LOCK:
        shared = _JOB_TASKS.get(key)
        if shared is None:
            options = job_task_options(job)
            options["task_run_name"] = "{name}"
            shared = _JOB_TASKS[key] = task(run_job_op, **options)
    return shared


class JobOpTask:
    """A DAG's job op as a task run of its shared task; the job is registered until released."""

    def __init__(self, job: PreparedJob, cancel: threading.Event) -> None:
        self.job = job
        self.cancel = cancel
        self.key = job.context.uuid
        self.outcome: RunResult | None = None
        """The `RunResult` of the task run's last attempt, once it reported one."""
        _JOBS[self.key] = self

    def submit(self, wait_for: list[PrefectFuture[Any]]) -> PrefectFuture[RunResult | State]:
        shared = _shared_job_task(self.job)
        return shared.submit(flow_name(self.job.op_name), self.key, wait_for=wait_for)

    def result(self, state: State) -> RunResult:
        """How the op ended: the result its last attempt reported (a cache hit says so), or,
        when no attempt reported one (cancelled or crashed first), what its state says."""
        result = self.outcome
        if result is None:
            return task_result(state, self.job).with_(message=state.message or "")
        if result.cached:
            return result.with_(message=cache_hit_line(self.job, result.uuid))
        return result

    def release(self) -> None:
        _JOBS.pop(self.key, None)
