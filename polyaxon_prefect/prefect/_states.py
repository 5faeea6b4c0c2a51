"""The one mapping between Polyaxon's statuses and Prefect's states.

Prefect 3 has no Skipped or UpstreamFailed state and no "timed out" type, so those are named
states of the nearest type; every runner (a job op, a DAG op's marker, a sweep, a trial, a DAG)
ends in the state this module gives, and reads a finished run's status back with
`polyaxon_status`:

==========================  =====================================  ======================
Polyaxon status             Prefect state                          read back as
==========================  =====================================  ======================
succeeded                   Completed (``Cached`` on a cache hit)  succeeded
skipped                     Completed named ``Skipped``            skipped
failed, at the deadline     Failed named ``TimedOut``              failed
failed                      Failed                                 failed
stopped                     Cancelled                              stopped
upstream_failed             Cancelled named ``UpstreamFailed``     upstream_failed
==========================  =====================================  ======================

A run that has not ended reads back as what it is doing, never as a failure: Scheduled (and
Late) is ``scheduled``, AwaitingRetry and Retrying are ``retrying``, Pending (``AwaitingGPUs``
too: an op waiting for its GPUs, the reason its message) and AwaitingConcurrencySlot are
``queued``, Running is ``running``, Paused is ``paused``,
Cancelling is ``stopping``; Crashed (the infrastructure died) is ``failed``. `STATE_TYPES`
is the same table read the other way, for filtering runs by status on the API.
"""

from __future__ import annotations

from prefect.client.schemas.objects import State, StateType
from prefect.states import Cancelled, Completed, Failed

from polyaxon_prefect.client import (
    BY_NAME,
    BY_TYPE,
    CACHED_STATE_NAME,
    SKIPPED_STATE_NAME,
    STATE_TYPES,
    TIMED_OUT_STATE_NAME,
    UPSTREAM_FAILED_STATE_NAME,
)
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import Status

__all__ = [
    "CACHED_STATE_NAME",
    "SKIPPED_STATE_NAME",
    "STATE_TYPES",
    "TIMED_OUT_STATE_NAME",
    "UPSTREAM_FAILED_STATE_NAME",
    "polyaxon_status",
    "state_for_result",
    "state_for_status",
]

_BY_TYPE: dict[StateType, str] = {StateType(t): Status(s) for t, s in BY_TYPE.items()}
_BY_NAME: dict[tuple[StateType, str], str] = {
    (StateType(t), name): Status(s) for (t, name), s in BY_NAME.items()
}


def polyaxon_status(state: State) -> str:
    """Polyaxon's status word for a Prefect state, final or not (see the module's table)."""
    state_type = StateType(state.type)
    return _BY_NAME.get((state_type, state.name or ""), _BY_TYPE[state_type])


def state_for_status(
    status: str, message: str, data: object = None, *, timed_out: bool = False
) -> State:
    """A new final state for a Polyaxon status (the inverse of `polyaxon_status`).

    ``data`` is kept only on ``succeeded``; every other status is a named or typed state
    carrying ``message``.
    """
    if status == Status.SUCCEEDED:
        return Completed(message=message, data=data)
    if status == Status.SKIPPED:
        return Completed(name=SKIPPED_STATE_NAME, message=message)
    if status == Status.UPSTREAM_FAILED:
        return Cancelled(name=UPSTREAM_FAILED_STATE_NAME, message=message)
    if status == Status.STOPPED:
        return Cancelled(message=message)
    if timed_out:
        return Failed(name=TIMED_OUT_STATE_NAME, message=message)
    return Failed(message=message)


def state_for_result(result: RunResult, data: object = None, *, prefix: str = "") -> State:
    """The final state of a run that ended as ``result``: its message (after ``prefix`` for
    a failure or a stop, e.g. "op `train` failed: "), ``data`` on success, ``Cached`` for a
    cache hit, ``TimedOut`` for a job killed at its deadline."""
    message = result.message or str(result.status)
    if result.status == Status.SUCCEEDED and result.cached:
        return Completed(name=CACHED_STATE_NAME, message=message, data=data)
    if prefix and result.status in (Status.FAILED, Status.STOPPED):
        message = prefix + message
    return state_for_status(result.status, message, data, timed_out=result.timed_out)
