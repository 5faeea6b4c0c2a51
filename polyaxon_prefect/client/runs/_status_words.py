"""The one mapping between Prefect's state types and names and Polyaxon's statuses, as plain
words (the API's JSON): `polyaxon_prefect.prefect._states` builds its enum tables from these,
and the thin client reads a run's status with them.
"""

from __future__ import annotations

__all__ = [
    "BY_NAME",
    "BY_TYPE",
    "CACHED_STATE_NAME",
    "DONE_STATUSES",
    "SKIPPED_STATE_NAME",
    "STATE_TYPES",
    "STATUSES",
    "TIMED_OUT_STATE_NAME",
    "UPSTREAM_FAILED_STATE_NAME",
    "status_of",
]

STATUSES = (
    "created",
    "scheduled",
    "queued",
    "running",
    "retrying",
    "paused",
    "stopping",
    "succeeded",
    "failed",
    "stopped",
    "skipped",
    "upstream_failed",
)
"""Polyaxon's status words, in `polyaxon_prefect.specs.Status`'s order (a test pins them)."""
DONE_STATUSES = frozenset({"succeeded", "failed", "stopped", "skipped", "upstream_failed"})
"""Statuses after which a run never changes again (`polyaxon_prefect.specs.DONE_STATUSES`)."""

SKIPPED_STATE_NAME = "Skipped"
UPSTREAM_FAILED_STATE_NAME = "UpstreamFailed"
TIMED_OUT_STATE_NAME = "TimedOut"
CACHED_STATE_NAME = "Cached"

BY_TYPE: dict[str, str] = {
    "COMPLETED": "succeeded",
    "FAILED": "failed",
    "CRASHED": "failed",
    "CANCELLED": "stopped",
    "CANCELLING": "stopping",
    "RUNNING": "running",
    "PENDING": "queued",
    "SCHEDULED": "scheduled",
    "PAUSED": "paused",
}
"""A state's status by its type (Prefect's ``StateType`` values)."""
BY_NAME: dict[tuple[str, str], str] = {
    ("COMPLETED", SKIPPED_STATE_NAME): "skipped",
    ("CANCELLED", UPSTREAM_FAILED_STATE_NAME): "upstream_failed",
    ("SCHEDULED", "AwaitingRetry"): "retrying",
    ("RUNNING", "Retrying"): "retrying",
    ("SCHEDULED", "AwaitingConcurrencySlot"): "queued",
}
"""Named states whose status is not their type's."""

STATE_TYPES: dict[str, tuple[str, ...]] = {
    status: tuple(
        sorted(
            {t for t, s in BY_TYPE.items() if s == status}
            | {t for (t, _name), s in BY_NAME.items() if s == status}
        )
    )
    for status in STATUSES
}
"""For each Polyaxon status, the Prefect state types a run in it can have (a superset where
a state's name decides, e.g. ``skipped`` is COMPLETED: filter on these, then on the status)."""


def status_of(state_type: str, name: str | None) -> str:
    """Polyaxon's status word for a state of ``state_type`` named ``name``."""
    return BY_NAME.get((state_type, name or ""), BY_TYPE[state_type])
