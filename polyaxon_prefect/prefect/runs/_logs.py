"""A run's status history read from Prefect's API (``statuses``, ``statuses -w``).

A run's log lines (``logs``, ``logs -f``) are read by `polyaxon_prefect.client.logs._log_reader`,
the one reader of both ways in: the flow layer hands it `PrefectApi` (`prefect.cli._logs_cli`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from polyaxon_prefect.client import StatusChange, status_changes
from polyaxon_prefect.client import status_history as read_status_history
from polyaxon_prefect.client.logs._log_reader import FOLLOW_POLL_SECONDS
from polyaxon_prefect.prefect.runs._runs import PrefectApi, _json, api_client

__all__ = [
    "FOLLOW_POLL_SECONDS",
    "StatusChange",
    "status_history",
    "watch_statuses",
]


# ----------------------------------------------------------------------------- statuses


def _changes(states: list[Any]) -> list[StatusChange]:
    """Prefect's states (or their JSON) as Polyaxon status changes, oldest first
    (`polyaxon_prefect.client.status_changes`)."""
    return status_changes([_json(state) for state in states])


def status_history(api: str, flow_run_id: str) -> list[StatusChange]:
    """The run's status changes so far (its flow run's state history through `_states`)."""
    with api_client(api) as client:
        return read_status_history(PrefectApi(client), flow_run_id)


def watch_statuses(
    api: str,
    flow_run_id: str,
    emit: Callable[[StatusChange], None],
    *,
    poll: float = FOLLOW_POLL_SECONDS,
) -> str:
    """Hand each status change to ``emit`` as it happens (the history first), until the run
    ended; return its final Polyaxon status."""
    from polyaxon_prefect.prefect._states import polyaxon_status

    shown = 0
    with api_client(api) as client:
        while True:
            run = client.read_flow_run(UUID(flow_run_id))
            changes = _changes(client.read_flow_run_states(UUID(flow_run_id)))
            for change in changes[shown:]:
                emit(change)
            shown = max(shown, len(changes))
            if run.state is not None and run.state.is_final():
                return polyaxon_status(run.state)
            time.sleep(poll)
