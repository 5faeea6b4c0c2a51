"""The statuses a Polyaxon run ends in, in one place.

`Status` is a `StrEnum`, so a status compares equal to its Polyaxon spelling (``"succeeded"``),
serialises to it in JSON and artifacts, and can replace a string literal without changing
behaviour. The sets name Polyaxon's lifecycle groups (``LifeCycle.DONE_VALUES`` and the failures
a trigger reacts to).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DONE_STATUSES", "FAILED_STATUSES", "Status"]


class Status(StrEnum):
    """How a run (job, DAG op, sweep trial, DAG or sweep) stands."""

    CREATED = "created"
    SCHEDULED = "scheduled"
    """Waits for its start time (a deployment's schedule, a retry's delay)."""
    QUEUED = "queued"
    """Due, waiting for a worker or a concurrency slot."""
    RUNNING = "running"
    RETRYING = "retrying"
    """Failed an attempt and will run again (``termination.maxRetries``)."""
    PAUSED = "paused"
    """Suspended until someone resumes it (Prefect's pause; Polyaxon has no equivalent)."""
    STOPPING = "stopping"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    SKIPPED = "skipped"
    UPSTREAM_FAILED = "upstream_failed"


DONE_STATUSES: frozenset[str] = frozenset(
    {Status.SUCCEEDED, Status.FAILED, Status.STOPPED, Status.SKIPPED, Status.UPSTREAM_FAILED}
)
"""Statuses after which a run never changes again (Polyaxon's ``LifeCycle.DONE_VALUES``)."""

FAILED_STATUSES: frozenset[str] = frozenset({Status.FAILED, Status.UPSTREAM_FAILED})
"""What ``all_failed``/``one_failed`` count as a failure (a cascade of failures is a failure)."""
