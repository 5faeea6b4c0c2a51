"""One job op, executed the same way for every caller: a top-level job, a DAG op, a sweep trial.

`execute_job_op` is one attempt of the op around the process: the op cache (a succeeded run
with the same key is reused, nothing else ever is) and the one message a failed job ends with.
It never retries: ``termination.maxRetries`` is the Prefect layer's (`retries`). It returns a
`RunResult`; how that result becomes a Prefect state is the Prefect layer's one mapping
(`polyaxon_prefect.prefect._states`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.runtime._executors import executor_for
from polyaxon_prefect.runtime._outcome import last_lines
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.cache._code_rules import short_code
from polyaxon_prefect.runtime.cache._run_cache import CacheHit, RunCache
from polyaxon_prefect.runtime.gpu._gpu_admit import admitted, with_no_gpu_hint
from polyaxon_prefect.runtime.logs._masking import mask_text, mask_value
from polyaxon_prefect.runtime.metrics._tensorboard import metric_events
from polyaxon_prefect.specs import Status

__all__ = [
    "LineCallback",
    "cache_hit_line",
    "cached_result",
    "execute_job_op",
    "failure_message",
    "job_report_rows",
    "retries",
    "table_says_more",
]

LineCallback = Callable[[str, str], None]
"""``on_line(stream, line)``: ``stream`` is ``stdout`` or ``stderr`` (lines arrive masked)."""

_TAIL_LINES = 10


def retries(job: PreparedJob) -> int:
    """How many times a failed attempt of ``job`` is retried (``termination.maxRetries``).

    The one retry mechanism is Prefect's task retries: a job op is a task run, so Prefect
    reruns a failed attempt, waits and counts the attempts where users look for them (the
    task run's run count in the UI). A sweep's job trial is the exception by design: it is
    recorded as a flow run without Prefect's engine (the engine's cost per trial was the whole
    cost of a sweep of short trials), so `polyaxon_prefect.prefect.sweep._trials` replays this same
    count around `execute_job_op`, logging each retry on the trial's flow run.
    """
    return max(int(job.max_retries or 0), 0)


def failure_message(job: PreparedJob, result: RunResult) -> str:
    """The job's own message, or one built from how its process ended and its last stderr."""
    message = result.message.strip()
    process = result.process
    if not message and process is not None:
        message = f"the process {process.describe()}"
        tail = last_lines(process.stderr_tail, _TAIL_LINES)
        if tail:
            message += "; last lines of stderr:\n" + "\n".join(tail)
    for problem in result.problems:
        if problem.message not in message:
            message += f"\n{problem.format()}"
    return mask_text(message or f"job `{job.op_name}` failed", job.secrets)


def _cache_hit(job: PreparedJob) -> CacheHit | None:
    """The succeeded run this job may reuse, when its cache is on (`RunCache`) and this run
    may read it (not ``run --no-cache``: `PreparedJob.cache_read`)."""
    if job.cache_key is None or not job.cache_read:
        return None
    return RunCache.under(job.context.artifacts_root).lookup(job.cache_key, job.cache_ttl)


def _cache_store(job: PreparedJob, result: RunResult, on_line: LineCallback) -> None:
    """Remember a *succeeded* run for its cache key (nothing else is ever stored)."""
    if job.cache_key is None:
        return
    try:
        RunCache.under(job.context.artifacts_root).store(
            job.cache_key,
            uuid=result.uuid or job.context.uuid,
            outputs=result.outputs,  # data for the ops downstream of a hit: not masked
            metrics=mask_value(result.metrics, job.secrets),
            artifacts_path=result.artifacts_path or str(job.context.run_artifacts_path),
        )
    except OSError as exc:  # a cache is an optimisation: never fail the op for it
        on_line("stderr", f"could not record the run in the cache: {exc}")


def _as_op_result(job: PreparedJob, result: RunResult) -> RunResult:
    """What the executor reported, as the op's result: the run's identity added, a failure's
    message made whole (`failure_message`), a success's outputs kept (a failure passes none
    downstream)."""
    context = job.context
    base = RunResult(
        Status.SUCCEEDED,
        uuid=context.uuid,
        name=job.op_name,
        metrics=dict(result.metrics),
        artifacts_path=str(context.run_artifacts_path),
    )
    if result.status == Status.SUCCEEDED:
        return base.with_(outputs=dict(result.outputs), message=str(Status.SUCCEEDED))
    if result.status == Status.SKIPPED:
        return base.with_(status=Status.SKIPPED, message=result.message or "skipped")
    process = result.process
    message = failure_message(job, result)
    if process is not None and process.timed_out:
        return base.with_(status=Status.FAILED, message=message, timed_out=True)
    if result.status == Status.STOPPED or (process is not None and process.cancelled):
        return base.with_(status=Status.STOPPED, message=message)
    return base.with_(status=Status.FAILED, message=message)


def cache_hit_line(job: PreparedJob, uuid: str | None) -> str:
    """The line that says a job op was a cache hit, and why: its cache key holds its spec,
    params and code hash (`PreparedJob.code_hash`), so the hit ran this very code."""
    same = "same op and params"
    if job.code_hash:
        same = f"same op, params and code {short_code(job.code_hash)}"
    return (
        f"cache hit: reused the outputs of run {uuid} ({same} as run {uuid}, which succeeded); "
        "no process was started"
    )


def cached_result(job: PreparedJob) -> RunResult | None:
    """The result of the succeeded run this job reuses (its outputs, uuid and artifacts), or
    None when its cache is off or has no valid entry."""
    hit = _cache_hit(job)
    if hit is None:
        return None
    message = cache_hit_line(job, hit.uuid)
    return RunResult(
        Status.SUCCEEDED,
        uuid=hit.uuid,
        name=job.op_name,
        outputs=dict(hit.outputs),
        metrics=dict(hit.metrics),
        artifacts_path=hit.artifacts_path,
        message=message,
        cached=True,
        code_hash=job.code_hash,
    )


def execute_job_op(
    job: PreparedJob,
    *,
    on_line: LineCallback,
    cancel_event: threading.Event | None = None,
    on_wait: Callable[[str], None] | None = None,
    on_start: Callable[[PreparedJob], None] | None = None,
) -> RunResult:
    """Run ``job`` as an op, once: reuse a cached success, else run its process and remember a
    success for its cache key (retries are the caller's: `retries`).

    The executor that prepared ``job`` runs it (`PreparedJob.run_kind`): one process for a
    job, one per replica for a distributed job, so every caller runs both the same way.

    ``cancel_event`` stops the process when set (early stopping, pruning, Ctrl-C): the op ends
    ``stopped``.

    A local op first takes its GPUs from the machine's pool (`admitted`), waiting while they
    are busy: ``on_wait(reason)`` says why (default: a line of its log), ``on_start(job)``
    when it has them (the job as it runs, its GPUs in its env).
    """
    cached = cached_result(job)
    if cached is not None:
        return cached
    waited = on_wait or (lambda reason: on_line("stdout", reason))
    try:
        executor = executor_for(job.run_kind, job.backend)
        with admitted(job, waited, cancel_event) as ready:
            if ready is None:
                stopped = RunResult(Status.STOPPED, message="cancelled while it waited for GPUs")
                return _as_op_result(job, stopped)
            if on_start is not None and ready is not job:
                on_start(ready)
            began = time.monotonic()
            say = lambda line: on_line("stderr", line)  # noqa: E731
            with metric_events(metric_paths(ready), say):
                raw = executor.execute(ready, on_line=on_line, cancel_event=cancel_event)
            gpus = sum(job.gpu_requests)
            held = gpus * (time.monotonic() - began) / 3600 if gpus else None
    except PolyaxonPrefectError as exc:  # command not found, bad outputs file, ...
        return RunResult(
            Status.FAILED,
            uuid=job.context.uuid,
            name=job.op_name,
            artifacts_path=str(job.context.run_artifacts_path),
            message=mask_text(str(exc), job.secrets),
        )
    # a cluster op's GPUs are not the machine's pool's: its executor measured them
    hours = held if held is not None else raw.gpu_hours
    result = with_no_gpu_hint(job, raw, _as_op_result(job, raw)).with_(
        gpu_hours=hours, code_hash=job.code_hash
    )
    if result.succeeded:
        _cache_store(job, result, on_line)
    return result


def metric_paths(job: PreparedJob) -> list[Path]:
    """The outputs folders whose ``metrics.jsonl`` the run's event files mirror: the run's
    (a distributed run's main replica writes there), and each other replica's own."""
    paths = [job.context.run_outputs_path]
    paths += [one.job.context.run_outputs_path for one in getattr(job, "replicas", ())]
    return list(dict.fromkeys(paths))


def _cache_note(result: RunResult) -> str:
    """What a cache hit's report says of it: the run whose outputs were reused."""
    return f"run {result.uuid} (a cache hit: its outputs were reused, no process was started)"


def _cell(value: object, secrets: tuple[str, ...]) -> Any:
    """A value as its JSON type (a number stays a number; the UI shows a dict or list as
    JSON), every string inside it masked."""
    return mask_value(value, secrets)


_SHOWN_BY_THE_DAG = frozenset({("run", "status"), ("run", "uuid")})
"""The rows of a DAG op's table that its task run and its DAG's report already show: the
status is the task run's state, the uuid is in the DAG's report (``get``, the ``-dag``
artifact)."""


def table_says_more(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a DAG op's table (`job_report_rows`) has a row beyond its status and uuid: a
    param, an output, a metric, a cache note, GPU-hours, an image. Only then is it written:
    a table is the one API write per op beyond its task run's events, and it cost the server
    a third more CPU per op of a chain of no-op jobs."""
    return any((row["kind"], row["name"]) not in _SHOWN_BY_THE_DAG for row in rows)


def job_report_rows(job: PreparedJob, result: RunResult) -> list[dict[str, Any]]:
    """Params, outputs and metrics of a job op's run as table rows (secrets masked), values
    with their JSON types: every metric, even one named like an output (``kind`` tells them
    apart)."""
    output_names = {getattr(io, "name", None) for io in job.outputs}
    rows: list[dict[str, Any]] = [
        {"kind": "run", "name": "status", "value": str(result.status)},
        {"kind": "run", "name": "uuid", "value": result.uuid or job.context.uuid},
    ]
    if result.cached:  # the one line that says these outputs are an earlier run's
        rows.append({"kind": "run", "name": "cached from", "value": _cache_note(result)})
    if result.gpu_hours is not None:
        rows.append({"kind": "run", "name": "gpu_hours", "value": result.gpu_hours})
    if job.image:
        rows.append({"kind": "run", "name": "image", "value": job.image})
    for name, value in sorted(job.params.items()):
        if name in output_names and value is None:
            continue  # an output's placeholder, not an input value
        rows.append(
            {
                "kind": "param",
                "name": mask_text(name, job.secrets),
                "value": _cell(value, job.secrets),
            }
        )
    for name, value in sorted(result.outputs.items()):
        rows.append(
            {
                "kind": "output",
                "name": mask_text(name, job.secrets),
                "value": _cell(value, job.secrets),
            }
        )
    for name, value in sorted(result.metrics.items()):
        rows.append(
            {
                "kind": "metric",
                "name": mask_text(name, job.secrets),
                "value": _cell(value, job.secrets),
            }
        )
    return rows
