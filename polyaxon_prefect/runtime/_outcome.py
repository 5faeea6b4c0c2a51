"""How a job ended: its `RunResult`, read back from the process and the files it wrote.

Apart from `execute_job` so that every way of running processes (a job, an init container,
later the replicas of a distributed run) words a failure, and reads outputs, the same way.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.runtime._errors import OutputsError
from polyaxon_prefect.runtime._outputs import read_metrics, read_outputs, validate_outputs
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.logs._masking import mask_text
from polyaxon_prefect.runtime.session._process import ProcessResult
from polyaxon_prefect.specs import Status
from polyaxon_prefect.tracking import OUTPUTS_FILE, get_last_metrics

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import PreparedJob

__all__ = [
    "LOG_FILE",
    "failed",
    "finish_ttl",
    "job_outcome",
    "process_message",
    "read_back",
]

LOG_FILE = "job.log"
"""The whole output of a run's processes (masked), under ``<run>/logs/``."""

_STDERR_LINES_IN_MESSAGE = 5


def failed(message: str, secrets: Sequence[str]) -> RunResult:
    """A job that failed before its process ran (or could start); the message masked."""
    return RunResult(Status.FAILED, message=mask_text(message, secrets))


_CARETS = re.compile(r"^\s*(?:\[[^\]]*\]:\s*)?[\^~]+\s*$")
_TRACEBACK = re.compile(r"^(?:\[[^\]]*\]:\s*)?Traceback \(most recent call last\):")


def last_lines(lines: Sequence[str], limit: int) -> list[str]:
    """The last lines of a process's output as a message shows them: a Python traceback whole
    from its ``Traceback`` line when it fits in three times ``limit`` lines, else the last
    ``limit`` lines starting at a frame (never in the middle of one); blank lines and the
    ``^^^^``/``~~~~`` markers under code left out."""
    kept = [line for line in lines if line.strip() and not _CARETS.match(line)]
    starts = [n for n, line in enumerate(kept) if _TRACEBACK.match(line)]
    if starts and len(kept) - starts[-1] <= 3 * limit:
        return kept[starts[-1] :]
    tail = kept[-limit:]
    while len(tail) > 1 and tail[0].startswith("    "):
        tail = tail[1:]
    return tail


def process_message(result: ProcessResult, timeout: float | None) -> str:
    if result.timed_out:
        limit = timeout if timeout is not None else result.duration
        return f"timed out after {limit:g}s"
    if result.cancelled:
        return "was cancelled"
    if result.signal is not None:
        import signal as _signal

        try:
            name = _signal.Signals(result.signal).name
        except ValueError:
            name = str(result.signal)
        return f"killed by signal {name}"
    message = f"exited with code {result.returncode}"
    tail = last_lines(result.stderr_tail, _STDERR_LINES_IN_MESSAGE)
    if tail:
        message += ": " + "\n".join(tail)
    return message


def finish_ttl(job: PreparedJob) -> None:
    """TTL 0: the run directory goes now; otherwise its expiry is recorded next to it."""
    if job.ttl is None:
        return
    run_path = job.context.run_path
    if job.ttl == 0:
        shutil.rmtree(run_path, ignore_errors=True)
        return
    expires = datetime.now(UTC) + timedelta(seconds=job.ttl)
    with contextlib.suppress(OSError):
        (run_path / "ttl.json").write_text(
            json.dumps({"ttl": job.ttl, "expires_at": expires.isoformat()}), encoding="utf-8"
        )


def read_back(
    job: PreparedJob,
) -> tuple[str, dict[str, Any], dict[str, Any], list[Problem]]:
    """What ``job`` left in its run's outputs directory, however it ran (a local process, a
    pod's handed-back block): the outputs file's path, the outputs it logged (empty when the
    file is unreadable, with the problem), its last metrics."""
    ctx = job.context
    outputs_file = str(ctx.run_outputs_path / OUTPUTS_FILE)
    problems: list[Problem] = []
    try:
        logged = read_outputs(ctx.run_outputs_path)
    except OutputsError as exc:
        logged = {}
        problems.append(Problem(str(exc), rule="outputs_file", file=outputs_file))
    rows: list[Mapping[str, Any]] = list(read_metrics(ctx.run_outputs_path))
    return outputs_file, logged, get_last_metrics(rows), problems


def job_outcome(job: PreparedJob, result: ProcessResult) -> RunResult:
    """The result of ``job`` whose process ended as ``result``: its outputs read back and
    checked against the declared ones, its last metrics, its status and message (masked)."""
    outputs_file, logged, metrics, problems = read_back(job)
    outputs: dict[str, Any] = {}
    if result.succeeded:
        if not problems:
            outputs, problems = validate_outputs(job.outputs, logged, file=outputs_file)
        if problems:
            status = Status.FAILED
            message = "the process exited with code 0 but its outputs are invalid: " + "; ".join(
                problem.message for problem in problems
            )
        else:
            status, message = Status.SUCCEEDED, str(Status.SUCCEEDED)
    else:
        outputs = {k: v for k, v in logged.items() if k in {io.name for io in job.outputs}}
        status = Status.STOPPED if result.cancelled else Status.FAILED
        message = process_message(result, job.timeout)
    if result.log_cut:  # the run's message must not let "the full output is in" stand
        message += f" ({result.log_cut})"
    return RunResult(
        status,
        outputs=outputs,
        metrics=metrics,
        message=mask_text(message, job.secrets),
        process=result,
        problems=problems,
    )
