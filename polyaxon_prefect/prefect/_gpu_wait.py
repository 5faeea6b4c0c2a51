"""An op waiting for GPUs, shown where users look: ``queued`` with the reason.

`execute_job_op` calls ``on_wait(reason)`` while the op's GPUs are busy and ``on_start`` when it
has them. Here the op's run says so: its state becomes ``Pending`` named `GPU_WAIT_STATE_NAME`
with the reason as its message (``queued`` through `polyaxon_prefect.prefect._states`, so
``ls``, ``get`` and the UI show ``queued: waiting for 1 GPU: 2 held by run ...``), the reason is
a line of its log, and the live table shows the op as ``queued`` with it. When its GPUs come,
the run is ``Running`` again. The states are forced: Prefect's own rules do not let a running
run go back to Pending, yet that is exactly what it is (a run that holds nothing yet).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any
from uuid import UUID

from polyaxon_prefect.prefect import _live
from polyaxon_prefect.runtime import PreparedJob

__all__ = ["GPU_WAIT_STATE_NAME", "gpu_wait_callbacks"]

GPU_WAIT_STATE_NAME = "AwaitingGPUs"


def _set(run_id: UUID, state: Any, *, task: bool) -> None:
    from prefect.client.orchestration import get_client

    with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # best effort
        if task:
            client.set_task_run_state(run_id, state, force=True)
        else:
            client.set_flow_run_state(run_id, state, force=True)


def gpu_wait_callbacks(
    job: PreparedJob, logger: Any, *, task: bool
) -> tuple[Callable[[str], None], Callable[[PreparedJob], None]]:
    """``on_wait`` and ``on_start`` for ``job`` run in the current task run (``task``: a DAG's
    op, whose task run waits) or flow run (a job alone, whose flow run waits)."""
    from prefect.context import FlowRunContext, TaskRunContext
    from prefect.states import Pending, Running

    if task:
        context: Any = TaskRunContext.get()
        run = context.task_run if context is not None else None
    else:
        context = FlowRunContext.get()
        run = context.flow_run if context is not None else None
    waited: list[str] = []

    def on_wait(reason: str) -> None:
        logger.info(reason)
        _live.notify_waiting(job.op_name, reason)
        if run is not None:
            _set(run.id, Pending(name=GPU_WAIT_STATE_NAME, message=reason), task=task)
        waited.append(reason)

    def on_start(ready: PreparedJob) -> None:
        if not waited:
            return
        _live.notify_waiting(job.op_name, "")
        if run is not None:
            _set(run.id, Running(message="got its GPUs"), task=task)

    return on_wait, on_start
