"""An op waiting for GPUs, shown where users look: ``queued`` with the reason.

`execute_job_op` calls ``on_wait(reason)`` while the op's GPUs are busy and ``on_start`` when it
has them. Here the op's run says so: its state becomes ``Pending`` named `GPU_WAIT_STATE_NAME`
with the reason as its message (``queued`` through `polyaxon_prefect.prefect._states`, so
``ls``, ``get`` and the UI show ``queued: waiting for 1 GPU: 2 held by run ...``), the reason is
a line of its log, and the live table shows the op as ``queued`` with it. When its GPUs come,
the run is ``Running`` again. The states are forced: Prefect's own rules do not let a running
run go back to Pending, yet that is exactly what it is (a run that holds nothing yet).

The cluster executor says the same of an op whose pod the cluster has not started
(`pod_wait_callbacks`: ``queued`` named `POD_WAIT_STATE_NAME`, its message the scheduler's
reason, ``0/3 nodes are available: 3 Insufficient nvidia.com/gpu``), on the same run: the one
`gpu_wait_callbacks` chose for the op, remembered for the op's executor in a context variable.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from polyaxon_prefect.prefect.watch import _live
from polyaxon_prefect.runtime import PreparedJob

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

    from polyaxon_prefect.prefect._settings import RunLogger

__all__ = [
    "GPU_WAIT_STATE_NAME",
    "POD_WAIT_STATE_NAME",
    "gpu_wait_callbacks",
    "pod_wait_callbacks",
    "waiting_run",
]

GPU_WAIT_STATE_NAME = "AwaitingGPUs"
POD_WAIT_STATE_NAME = "AwaitingPod"


@dataclass(frozen=True)
class _Waiter:
    """The op's run that shows its waits, and the op's name in the live table."""

    run_id: UUID | None
    task: bool
    op_name: str


_WAITER: contextvars.ContextVar[_Waiter | None] = contextvars.ContextVar(
    "polyaxon_prefect_waiter", default=None
)


def _set(run_id: UUID, state: State, *, task: bool) -> None:
    from prefect.client.orchestration import get_client

    with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # best effort
        if task:
            client.set_task_run_state(run_id, state, force=True)
        else:
            client.set_flow_run_state(run_id, state, force=True)


def gpu_wait_callbacks(
    job: PreparedJob, logger: RunLogger, *, task: bool
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
    _WAITER.set(_Waiter(run.id if run is not None else None, task, job.op_name))

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


def waiting_run() -> tuple[UUID, bool] | None:
    """The run that shows the current op's waits and whether it is a task run (a DAG's op),
    or None outside an op's run: what holds the op's GPU-class slots (`_gpu_slots`)."""
    waiter = _WAITER.get()
    if waiter is None or waiter.run_id is None:
        return None
    return waiter.run_id, waiter.task


def pod_wait_callbacks(
    state_name: str = POD_WAIT_STATE_NAME,
) -> tuple[Callable[[str], None], Callable[[str], None]] | None:
    """``on_pending(reason)`` and ``on_running(message)`` for the op this executor runs (the
    run `gpu_wait_callbacks` chose for it), or None outside an op's run. Each call is one
    state of the run (``queued`` named ``state_name`` with the reason, then ``running``) and
    the live table's; `GPU_WAIT_STATE_NAME` for an op waiting for its GPU-class slots."""
    from prefect.states import Pending, Running

    waiter = _WAITER.get()
    if waiter is None:
        return None

    def on_pending(reason: str) -> None:
        _live.notify_waiting(waiter.op_name, reason)
        if waiter.run_id is not None:
            pending: Any = Pending(name=state_name, message=reason)
            _set(waiter.run_id, pending, task=waiter.task)

    def on_running(message: str) -> None:
        _live.notify_waiting(waiter.op_name, "")
        if waiter.run_id is not None:
            _set(waiter.run_id, Running(message=message), task=waiter.task)

    return on_pending, on_running
