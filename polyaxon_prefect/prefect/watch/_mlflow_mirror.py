"""Every run mirrored into MLflow as it goes, when a team has MLflow.

On when ``MLFLOW_TRACKING_URI`` (MLflow's own variable) is set, unless
``POLYAXON_PREFECT_MLFLOW`` is ``0``/``false``/``off``/``no``; the ``mlflow`` extra installs the
client. Nothing imports MLflow before a mirrored run starts (not ``check``, not a run without
the variable): `_mlflow_worker` does, in its own thread.

One MLflow run per Polyaxon run, in the experiment named after its project: its params, the
history of its metrics (the lines of its ``metrics.jsonl`` at their steps, sent while it runs),
its outputs, its tags (its Polyaxon tags, op, kind, Prefect flow run), its end status and the
files of its run folder as artifacts (`_mlflow_values` says what each becomes). A DAG or a
sweep is a parent run whose ops and trials are nested under it (MLflow's
``mlflow.parentRunId``), at any depth. A distributed run is one MLflow run: its main replica
writes the run's own metrics file, the other replicas write nothing of their own.

A DAG or a sweep (`mirror_parent`, called by the dispatcher) is the parent of whatever starts
inside it while it runs: a context variable, copied by Prefect's task runner and by the sweep
into the threads they start (a trial run by a deployment, in another process, is a top-level
MLflow run). A job's attempt (`mirror_job`: a job run alone, a DAG's job op, a sweep's job
trial) is mirrored where it runs. Only a top-level run waits at its end for what it queued, at
most ``POLYAXON_PREFECT_MLFLOW_WAIT`` seconds (default `WAIT_SECONDS`). A mirror that fails says
so in one line of the run's log and never fails the run (`_mlflow_worker.Session`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from polyaxon_prefect.prefect.watch import _mlflow_values as values
from polyaxon_prefect.prefect.watch._mlflow_worker import (
    WORKER,
    MirroredRun,
    RunEnd,
    Session,
    Unusable,
    create_run,
    finish_run,
    reopen_run,
)
from polyaxon_prefect.runtime.logs._masking import mask_text, mask_value
from polyaxon_prefect.specs import Status, record_kind
from polyaxon_prefect.tracking import METRICS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.prefect._settings import RunLogger
    from polyaxon_prefect.runtime import PreparedJob, RunResult

__all__ = [
    "ENV_SWITCH",
    "ENV_URI",
    "ENV_WAIT",
    "enabled",
    "mirror_job",
    "mirror_parent",
    "mirrors_job_trial",
]

ENV_URI = "MLFLOW_TRACKING_URI"
ENV_SWITCH = "POLYAXON_PREFECT_MLFLOW"
ENV_WAIT = "POLYAXON_PREFECT_MLFLOW_WAIT"
WAIT_SECONDS = 60.0
"""How long a top-level run waits at its end for the mirror by default."""
_OFF = frozenset({"0", "false", "off", "no"})
_REMEMBERED = 4096
"""Runs remembered by uuid (a retried attempt reopens its MLflow run), newest kept."""

Heard = Callable[["RunResult"], None]


def enabled() -> bool:
    """Whether runs are mirrored: ``MLFLOW_TRACKING_URI`` set and the switch not off."""
    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    return bool(os.environ.get(ENV_URI, "").strip()) and switch not in _OFF


def _wait_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV_WAIT, "") or WAIT_SECONDS))
    except ValueError:
        return WAIT_SECONDS


T = TypeVar("T")

_PARENT: contextvars.ContextVar[MirroredRun | None] = contextvars.ContextVar(
    "polyaxon_prefect_mlflow_parent", default=None
)
_RUNS: dict[str, MirroredRun] = {}
_RUNS_LOCK = threading.Lock()


def _logger() -> RunLogger:
    """The current run's logger (the line shows in the terminal and in Prefect), else ours."""
    try:
        from prefect import get_run_logger

        return get_run_logger()
    except Exception:  # outside a flow or task run
        return logging.getLogger("polyaxon_prefect.mlflow")


def _guarded(call: Callable[[], T]) -> T | None:
    """``call()``, else None: what the mirror does in the run's own thread never fails it."""
    try:
        return call()
    except Exception as exc:
        _logger().warning("MLflow mirror skipped: %s: %s", type(exc).__name__, exc)
        return None


def _begin(
    uuid: str, run: Callable[[Session, MirroredRun | None], MirroredRun]
) -> MirroredRun | None:
    """Start mirroring run ``uuid`` (``run`` builds it), nested in the current parent; a
    retried attempt of a run already mirrored reopens its MLflow run."""
    with _RUNS_LOCK:
        earlier = _RUNS.get(uuid)
    if earlier is not None:
        if earlier.session.broken:
            return None
        WORKER.submit(earlier.session, functools.partial(reopen_run, earlier))
        return earlier
    parent = _PARENT.get()
    uri = os.environ.get(ENV_URI, "").strip()
    session = parent.session if parent is not None else Session(uri, _logger(), mask_text)
    if session.broken:
        return None
    started = run(session, parent)
    with _RUNS_LOCK:
        _RUNS[uuid] = started
        while len(_RUNS) > _REMEMBERED:
            _RUNS.pop(next(iter(_RUNS)))
    WORKER.submit(session, functools.partial(create_run, started))
    return started


def _end(run: MirroredRun, end: RunEnd) -> None:
    """Queue the run's end; a top-level run waits for the mirror (bounded)."""
    WORKER.submit(run.session, functools.partial(finish_run, run, end))
    if run.parent is not None:
        return
    wait = _wait_seconds()
    if not WORKER.flush(wait) and not run.session.broken:
        run.session.fail(
            Unusable(f"not done after {wait:g} s ({ENV_WAIT}): what was left is dropped")
        )


def _prefect_tags(
    flow_run_id: str | None, *, from_context: bool, task: bool = False
) -> dict[str, str]:
    """The Prefect flow run a run belongs to (given, else the current one when
    ``from_context``) and, with ``task``, the current task run (a job's own)."""
    from prefect.context import FlowRunContext, TaskRunContext
    from prefect.utilities.urls import url_for

    found: dict[str, str] = {}
    if flow_run_id is None and from_context:
        context = FlowRunContext.get()
        if context is not None and context.flow_run is not None:
            flow_run_id = str(context.flow_run.id)
    task_run = TaskRunContext.get() if task else None
    if task_run is not None:
        found["prefect.task_run_id"] = str(task_run.task_run.id)
    if flow_run_id:
        found["prefect.flow_run_id"] = flow_run_id
        url = url_for("flow-run", obj_id=flow_run_id)
        if url:
            found["prefect.flow_run_url"] = url
    return found


def _crash_end(error: BaseException | None) -> tuple[Status, str]:
    if isinstance(error, KeyboardInterrupt):
        return Status.STOPPED, "interrupted"
    return Status.FAILED, f"the run crashed: {error}" if error else "the run ended without a result"


# ----------------------------------------------------------------------------- the hooks


@contextlib.contextmanager
def mirror_job(
    job: PreparedJob, name: str | None = None, *, in_flow_run: bool = True
) -> Iterator[Heard]:
    """Mirror one attempt of ``job`` while the body runs; the body hands the attempt's result
    to the function it gets. ``name``: its MLflow run name (default: the op's);
    ``in_flow_run``: the current flow run is the job's (a sweep's job trial gets its own flow
    run at its end, in its result)."""
    if not enabled():
        yield lambda _result: None
        return
    heard: list[RunResult] = []
    run = _guarded(lambda: _begin(job.context.uuid, functools.partial(_job_run, job, name)))
    error: BaseException | None = None
    try:
        yield heard.append
    except BaseException as exc:
        error = exc
        raise
    finally:
        if run is not None:
            last = heard[-1] if heard else None
            _guarded(lambda: _end(run, _job_end(job, last, error, in_flow_run)))


def mirrors_job_trial(run_trial: Callable[..., RunResult]) -> Callable[..., RunResult]:
    """``run_job_trial(job, *, name, ...)`` mirrored as a job's attempt is (`mirror_job`); its
    flow run is the one its result names (made at its end), not the sweep's."""

    @functools.wraps(run_trial)
    def mirrored(job: PreparedJob, **options: Any) -> RunResult:
        with mirror_job(job, options.get("name"), in_flow_run=False) as heard:
            result = run_trial(job, **options)
            heard(result)
        return result

    return mirrored


def _job_run(
    job: PreparedJob, name: str | None, session: Session, parent: MirroredRun | None
) -> MirroredRun:
    from polyaxon_prefect.prefect.runs._run_record import job_params

    context = job.context
    tags = values.start_tags(
        uuid=context.uuid,
        project=context.project_name,
        op=job.op_name,
        kind=job.run_kind,
        tags=job.tags,
        username=context.username,
        iteration=context.iteration,
        artifacts_path=str(context.run_artifacts_path),
    )
    return MirroredRun(
        session,
        name or job.op_name,
        context.project_name,
        values.param_values(job_params(job)),
        tags,
        parent,
        metrics_path=context.run_outputs_path / METRICS_FILE,
    )


def _job_end(
    job: PreparedJob, result: RunResult | None, error: BaseException | None, in_flow_run: bool
) -> RunEnd:
    if result is None:
        status, message = _crash_end(error)
        flow_run_id = None
    else:
        status, message, flow_run_id = result.status, result.message, result.flow_run_id
    cached = result is not None and result.cached
    tags = values.end_tags(
        status,
        mask_text(message, job.secrets),
        cached_from=result.uuid if cached and result is not None else None,
    )
    tags.update(_prefect_tags(flow_run_id, from_context=in_flow_run, task=in_flow_run))
    outputs = mask_value(dict(result.outputs), job.secrets) if result is not None else {}
    # a cache hit ran nothing: its files are the earlier run's, mirrored with that run
    artifacts = None if cached else job.context.run_artifacts_path
    return RunEnd(values.mlflow_status(status), tags, outputs, artifacts=artifacts)


@contextlib.contextmanager
def mirror_parent(
    request: OpRequest, on_outcome: Heard | None, *, searched: bool = False
) -> Iterator[tuple[OpRequest, Heard | None]]:
    """Mirror a DAG or a sweep while the body runs it: the body gets the request (with its
    run context made, as its runner would) and the outcome callback to hand its runner; what
    starts inside is nested under it. ``searched``: a sweep, whose params are only those given
    to it (its inputs' defaults are its trials', where the matrix sets them)."""
    if not enabled():
        yield request, on_outcome
        return
    if request.run_context is None:
        from polyaxon_prefect.runtime import new_run_context, project_name

        context = new_run_context(request.op_name, project_name()).make_dirs()
        request = request.with_(run_context=context)
    heard: list[RunResult] = []

    def hear(outcome: RunResult) -> None:
        heard.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    assert request.run_context is not None
    uuid = request.run_context.uuid
    run = _guarded(lambda: _begin(uuid, functools.partial(_parent_run, request, searched)))
    token = _PARENT.set(run) if run is not None else None
    error: BaseException | None = None
    try:
        yield request, hear
    except BaseException as exc:
        error = exc
        raise
    finally:
        if token is not None:
            _PARENT.reset(token)
        if run is not None:
            last = heard[-1] if heard else None
            _guarded(lambda: _end(run, _parent_end(request, last, error, searched)))


def _parent_run(
    request: OpRequest, searched: bool, session: Session, parent: MirroredRun | None
) -> MirroredRun:
    from polyaxon_prefect.prefect.runs._run_record import record_params, request_labels

    context = request.run_context
    assert context is not None
    labels = request_labels(request)
    tags = values.start_tags(
        uuid=context.uuid,
        project=context.project_name,
        op=request.op_name,
        kind=record_kind(request.operation),
        tags=labels["tags"],
        description=labels["description"],
        username=context.username,
        iteration=context.iteration,
        artifacts_path=str(context.run_artifacts_path),
    )
    tags.update(_prefect_tags(None, from_context=True))
    # a sweep's params are known at its end: those its trials did not set (`_parent_end`)
    params = {} if searched else _given_params(record_params(request))
    name = request.name or request.op_name
    return MirroredRun(session, name, context.project_name, params, tags, parent)


def _given_params(given: Mapping[str, Any], searched: Iterable[str] = ()) -> dict[str, str]:
    """Params as MLflow's: an output's placeholder (None) and a searched param left out."""
    left_out = set(searched)
    kept = {k: v for k, v in given.items() if v is not None and k not in left_out}
    return values.param_values(kept)


def _sweep_params(request: OpRequest, outcome: RunResult | None) -> dict[str, str]:
    """A sweep's own params: those given to it but the ones its trials set (the matrix's)."""
    given = mask_value({**dict(request.loaded.params or {}), **dict(request.params)})
    trials = (outcome.trials if outcome is not None else None) or []
    return _given_params(given, {name for trial in trials for name in trial.get("params") or {}})


def _parent_end(
    request: OpRequest, outcome: RunResult | None, error: BaseException | None, searched: bool
) -> RunEnd:
    context = request.run_context
    assert context is not None
    if outcome is None:
        status, message = _crash_end(error)
        return RunEnd(values.mlflow_status(status), values.end_tags(status, message))
    tags = values.end_tags(outcome.status, mask_text(outcome.message))
    tags.update(_prefect_tags(outcome.flow_run_id, from_context=True))
    if outcome.best is not None and outcome.best.get("index") is not None:
        tags["polyaxon.best_trial"] = str(outcome.best["index"])
    return RunEnd(
        values.mlflow_status(outcome.status),
        tags,
        mask_value(dict(outcome.outputs)),
        mask_value(dict(outcome.metrics)),
        artifacts=context.run_artifacts_path,
        params=_sweep_params(request, outcome) if searched else {},
    )
