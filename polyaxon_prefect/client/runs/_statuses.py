"""A run's status history (``statuses``): its flow run's states, as the API's JSON, turned into
Polyaxon status changes through the one state mapping (`_status_words`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.runs._status_words import status_of

__all__ = ["StatusChange", "status_changes", "status_history"]


@dataclass(frozen=True)
class StatusChange:
    """One step of a run's status history: when, the Polyaxon status, and the state's message."""

    timestamp: datetime
    status: str
    message: str

    def line(self) -> str:
        """``2026-05-04 10:11:12  running  message``, in this machine's local time."""
        when = self.timestamp.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        return f"{when}  {self.status}" + (f"  {self.message}" if self.message else "")

    def record(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp.isoformat(),
            "status": self.status,
            "message": self.message,
        }


def status_changes(states: list[dict[str, Any]]) -> list[StatusChange]:
    """The states (the API's JSON) as Polyaxon status changes, oldest first; a state with the
    same status as the one before it (Late after Scheduled, Retrying after AwaitingRetry) is
    no change."""
    timed = [(datetime.fromisoformat(state["timestamp"]), state) for state in states]
    changes: list[StatusChange] = []
    for when, state in sorted(timed, key=lambda pair: pair[0]):
        status = status_of(state["type"], state.get("name"))
        if changes and changes[-1].status == status:
            continue
        changes.append(StatusChange(when, status, state.get("message") or ""))
    return changes


def status_history(api: Api, flow_run_id: str) -> list[StatusChange]:
    """The run's status changes so far (its flow run's state history)."""
    return status_changes(api.get(f"/flow_run_states/?flow_run_id={flow_run_id}") or [])
