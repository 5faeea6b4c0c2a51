"""Asking Prefect to stop a flow run (what ``polyaxon-prefect stop`` does after finding it).

Only a top-level flow run is cancelled: that is the one its process watches (a DAG's op or a
sweep's trial is a child flow run in the same process, stopped with its root). A child given
by its id is refused with the root's id, rather than left Cancelling with nobody to end it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect.runs._stop_watch import STOP_REASON

if TYPE_CHECKING:
    from prefect.client.schemas import OrchestrationResult

__all__ = ["request_cancel"]


def _root_of(client: Any, run: Any) -> Any:
    """The top-level flow run that ``run`` is a child of (``run`` itself when it is one)."""
    seen = 0
    while run.parent_task_run_id is not None and seen < 50:  # nesting is shallow; no loop
        parent_task = client.read_task_run(run.parent_task_run_id)
        if parent_task.flow_run_id is None:
            break
        run = client.read_flow_run(parent_task.flow_run_id)
        seen += 1
    return run


def request_cancel(api: str, flow_run_id: str) -> str:
    """Set flow run ``flow_run_id`` (at ``api``) Cancelling; return its Polyaxon status after
    (``stopping``, or ``stopped`` when the server cancelled it at once: nothing ran it yet).

    A child run, or a transition the server refuses, is one `PolyaxonPrefectError` line."""
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.states import Cancelling

    from polyaxon_prefect.prefect._states import polyaxon_status
    from polyaxon_prefect.prefect.runs._runs import api_client

    with api_client(api) as c:
        run = c.read_flow_run(UUID(flow_run_id))
        root = _root_of(c, run)
        if root.id != run.id:
            raise PolyaxonPrefectError(
                f"run `{run.name}` ({run.id}) is an op or trial of run `{root.name}` "
                f"({root.id}): stop that run (`polyaxon-prefect stop {root.id}`)"
            )
        result: OrchestrationResult[Any] = c.set_flow_run_state(
            run.id, Cancelling(message=STOP_REASON)
        )
    if result.status == SetStateStatus.ABORT or result.state is None:
        reason = getattr(result.details, "reason", None) or "no reason given"
        raise PolyaxonPrefectError(f"the Prefect server refused to stop run {run.id}: {reason}")
    state = result.state
    if result.status == SetStateStatus.REJECT and state.type not in (
        StateType.CANCELLING,
        StateType.CANCELLED,
    ):
        reason = getattr(result.details, "reason", None) or f"it is {polyaxon_status(state)}"
        raise PolyaxonPrefectError(f"the Prefect server refused to stop run {run.id}: {reason}")
    return polyaxon_status(state)
