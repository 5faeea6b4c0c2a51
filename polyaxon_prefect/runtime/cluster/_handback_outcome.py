"""A cluster op's outputs and metrics, as its pod handed them back, written into the run.

The pod prints them in one block at the end of its log (`polyaxon_prefect.kubernetes._handback`
says why that channel); the watcher parses it. Here the block becomes what a local job leaves:
``outputs.json`` and ``metrics.jsonl`` under the run's own ``outputs/`` directory on this
machine, read back and checked against the declared outputs the same way (`job_outcome`), so
refs, DAG conditions, a sweep's objective, early stopping, ``ls``/``get`` and the artifacts see
a cluster op exactly as a local one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.kubernetes import LIMIT_BYTES, Handback
from polyaxon_prefect.runtime._outcome import read_back
from polyaxon_prefect.runtime._outputs import validate_outputs
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import Status
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import PreparedJob

__all__ = ["handback_outcome"]


def _write(job: PreparedJob, block: Handback | None) -> None:
    """The block's files into the run's outputs directory (an earlier attempt's removed)."""
    ctx = job.context
    ctx.make_dirs()
    for name in (OUTPUTS_FILE, METRICS_FILE):
        (ctx.run_outputs_path / name).unlink(missing_ok=True)
    if block is None:
        return
    if block.outputs_text is not None and block.outputs_text.strip():
        (ctx.run_outputs_path / OUTPUTS_FILE).write_text(block.outputs_text, encoding="utf-8")
    if block.metrics_lines:
        text = "\n".join(block.metrics_lines) + "\n"
        (ctx.run_outputs_path / METRICS_FILE).write_text(text, encoding="utf-8")


def handback_outcome(job: PreparedJob, result: RunResult, block: Handback | None) -> RunResult:
    """``result`` (how the cluster said the op ended) with the outputs and metrics of the
    pod's ``block`` written into the run and read back: a success whose outputs are missing,
    invalid or too big for the channel fails, saying which."""
    _write(job, block)
    outputs_file, logged, metrics, problems = read_back(job)
    declared = {getattr(io, "name", None) for io in job.outputs}
    if block is not None and block.too_big is not None:
        problems.insert(
            0,
            Problem(
                f"the pod's outputs.json is {block.too_big} bytes, over the "
                f"{LIMIT_BYTES // 1024} KiB its log hands back",
                rule="outputs_too_big",
                file=outputs_file,
                hint="log small values as outputs and write large ones as artifacts (files)",
            ),
        )
    if result.status != Status.SUCCEEDED:
        outputs = {k: v for k, v in logged.items() if k in declared}
        return result.with_(outputs=outputs, metrics=metrics)
    if not problems:
        outputs, problems = validate_outputs(job.outputs, logged, file=outputs_file)
    else:
        outputs = {}
    if not problems:
        return result.with_(outputs=outputs, metrics=metrics)
    message = "the pod exited with code 0 but its outputs are invalid: " + "; ".join(
        problem.message for problem in problems
    )
    if block is None and declared:
        message += (
            " (its log has no outputs block: the image needs `sh`, and the command must be "
            "the container's `command`, not the image's entrypoint)"
        )
    return result.with_(
        status=Status.FAILED, outputs={}, metrics=metrics, message=message, problems=problems
    )
