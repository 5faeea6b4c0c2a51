"""A cluster op's GPUs taken, all at once, as slots of Prefect global concurrency limits.

On a cluster without Kueue nothing admits a distributed op as one gang: its replicas' pods are
scheduled one by one, and two ops can each get half their GPUs and wait on each other forever.
So, before it creates any Job or replica, the cluster executor takes every GPU the op asks for
(`polyaxon_prefect.kubernetes.gpu_slots`: replicas x GPUs per pod, by GPU class) from the
Prefect global concurrency limit of each class (``gpu-nvidia.com-gpu``,
``gpu-nvidia.com-gpu-a100``), all or none, and gives them back when the op ends, however it
ends. Prefect's own ``concurrency`` context manager takes and gives them, under a lease it
renews while the op runs: a process killed with its slots frees them when the lease expires
(300 s).

What happens to each class:

- no limit of that name: the op is not gated; one line of its log says so and how to create
  one (``prefect gcl create gpu-nvidia.com-gpu --limit 8``). Nothing is created here: Prefect's
  ``create_if_missing`` is deprecated, and a limit made up here would have to guess the size;
- a disabled limit: not gated either, said the same way;
- a request larger than the limit: refused before anything is created (`GpuSlotsError`);
- the slots taken by other ops: the op's run is ``queued`` (state ``AwaitingGPUs``) with the
  reason, ``waiting for 2 GPUs of class gpu-nvidia.com-gpu: 7 of 8 slots taken``, in ``get``,
  ``ls`` and its log, and ``running`` once it has them.

Classes are taken in name order, so two ops of several classes never hold one each of what
the other waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from polyaxon_prefect.kubernetes import (
    file_queue,
    gpu_slots,
    no_limit_note,
    slots_refusal,
    slots_wait_reason,
)
from polyaxon_prefect.prefect.kubernetes._gpu_wait import (
    GPU_WAIT_STATE_NAME,
    pod_wait_callbacks,
    waiting_run,
)
from polyaxon_prefect.prefect.kubernetes._kubernetes_scheduling import PodScheduling
from polyaxon_prefect.runtime import RunResult, stop_requested
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from prefect.client.schemas.objects import ConcurrencyLeaseHolder
    from prefect.client.schemas.responses import GlobalConcurrencyLimitResponse

__all__ = ["GpuSlotsError", "Submission", "held_gpu_slots", "in_gpu_slots"]

_LOCKED = 423
"""The API's answer when a limit has too few free slots."""


class GpuSlotsError(Exception):
    """The op can never take its GPU slots (more than the limit), or the API refused them."""


def _holder() -> ConcurrencyLeaseHolder | None:
    """The op's run as the lease's holder (what Prefect's UI shows holding the slots)."""
    from prefect.client.schemas.objects import ConcurrencyLeaseHolder

    run = waiting_run()
    if run is None:
        return None
    run_id, task = run
    return ConcurrencyLeaseHolder(type="task_run" if task else "flow_run", id=run_id)


def _locked(exc: BaseException) -> bool:
    """Whether a failed acquisition only found the slots taken (HTTP 423 from the API)."""
    import httpx

    cause = exc.__cause__
    return isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == _LOCKED


async def _limit(name: str) -> GlobalConcurrencyLimitResponse | None:
    """The limit named ``name``, or None when there is none."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async with get_client() as client:
        try:
            return await client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            return None


@contextlib.asynccontextmanager
async def held_gpu_slots(
    slots: Mapping[str, int],
    *,
    say: Callable[[str], None],
    stopped: Callable[[], bool],
    interval: float,
) -> AsyncIterator[bool]:
    """Hold ``slots`` (``{limit name: count}``) while the block runs: True once they are
    held (or no limit gates them), False when the op was stopped while it waited.

    Raises:
        GpuSlotsError: a request larger than its limit (before anything is taken), or an
            acquisition the API refused for another reason than taken slots.
    """
    gated: dict[str, int] = {}
    for name, wanted in sorted(slots.items()):
        limit = await _limit(name)
        if limit is None:
            say(no_limit_note(name, wanted))
        elif not limit.active:
            say(f"the Prefect global concurrency limit `{name}` is disabled: not queued for it")
        elif wanted > limit.limit:
            raise GpuSlotsError(slots_refusal(name, wanted, limit.limit))
        else:
            gated[name] = wanted
    async with contextlib.AsyncExitStack() as stack:
        held = True
        for name, wanted in gated.items():
            held = await _take(stack, name, wanted, say=say, stopped=stopped, interval=interval)
            if not held:
                break
        yield held


async def _take(
    stack: contextlib.AsyncExitStack,
    name: str,
    wanted: int,
    *,
    say: Callable[[str], None],
    stopped: Callable[[], bool],
    interval: float,
) -> bool:
    """Take ``wanted`` slots of ``name`` into ``stack``, waiting (``queued``, with the reason)
    while they are taken; False when the op was stopped first."""
    from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError, concurrency

    waits = pod_wait_callbacks(GPU_WAIT_STATE_NAME)
    holder = _holder()
    said: str | None = None
    while not stopped():
        try:
            await stack.enter_async_context(
                concurrency(
                    name,
                    occupy=wanted,
                    max_retries=0,  # taken slots come back at once: the wait is said here
                    strict=True,
                    holder=holder,
                    raise_on_lease_renewal_failure=False,  # never kill a running op for it
                )
            )
        except ConcurrencySlotAcquisitionError as exc:
            if not _locked(exc):
                if await _limit(name) is None:  # deleted while the op waited
                    say(no_limit_note(name, wanted))
                    return True
                raise GpuSlotsError(f"could not take GPU slots of `{name}`: {exc}") from None
        else:
            if said is not None:
                say(f"took {wanted} slot(s) of `{name}`")
                if waits is not None:
                    await asyncio.to_thread(waits[1], f"got its GPUs of class {name}")
            return True
        limit = await _limit(name)
        taken = limit.active_slots if limit is not None else None
        reason = slots_wait_reason(name, wanted, taken, limit.limit if limit is not None else 0)
        if reason != said:
            said = reason
            say(reason)
            if waits is not None:
                await asyncio.to_thread(waits[0], reason)
        await asyncio.sleep(interval)
    return False


async def _timed(submission: Submission, gpus: int) -> RunResult:
    """``submission.run()`` with its GPU-hours when it asked for GPUs: its GPUs x the time
    its pods were placed (created to deleted, less the time the cluster left them pending:
    they held no GPU then), as a local op's are its GPUs x the time it held them."""
    began = time.monotonic()
    result = await submission.run()
    if not gpus:
        return result
    placed = max(time.monotonic() - began - submission.scheduling.unplaced_seconds(), 0.0)
    return result.with_(gpu_hours=gpus * placed / 3600)


class Submission(Protocol):
    """A cluster run about to be submitted (the executor's `_Submission`)."""

    manifests: list[dict[str, Any]]
    cancel_event: threading.Event
    interval: float
    """Seconds between two looks for free slots (``POLYAXON_PREFECT_K8S_POLL_INTERVAL``)."""

    @property
    def scheduling(self) -> PodScheduling: ...

    def say(self, text: str) -> None: ...

    async def run(self) -> RunResult: ...


def _in_a_run() -> bool:
    """Whether this runs in a flow run, so on the Prefect server whose limits gate it (the
    executor called alone, outside any run, has no server to ask: not gated)."""
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


async def in_gpu_slots(submission: Submission) -> RunResult:
    """``submission.run()`` (it creates the manifests, watches them and deletes them) inside
    the op's GPU-class slots when no Kueue queue admits it as a gang: taken before anything
    is created, given back once it returned, whatever the ending. Only in a flow run."""
    manifests = submission.manifests
    gpus = gpu_slots(manifests)
    slots = {} if file_queue(manifests) else gpus
    if not slots or not _in_a_run():
        return await _timed(submission, sum(gpus.values()))
    cancel = submission.cancel_event
    try:
        async with held_gpu_slots(
            slots,
            say=submission.say,
            stopped=lambda: cancel.is_set() or stop_requested(),
            interval=submission.interval,
        ) as held:
            if not held:
                return RunResult(Status.STOPPED, message="was cancelled while it waited for GPUs")
            return await _timed(submission, sum(gpus.values()))
    except GpuSlotsError as exc:
        return RunResult(Status.FAILED, message=str(exc))
