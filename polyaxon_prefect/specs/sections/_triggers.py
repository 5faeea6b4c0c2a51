"""When a DAG op may start, given how its upstream ops ended (spec 5.3)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TriggerPolicy"]


class TriggerPolicy(StrEnum):
    """Polyaxon's six trigger policies; unset means ``all_succeeded``."""

    ALL_SUCCEEDED = "all_succeeded"
    ALL_FAILED = "all_failed"
    ALL_DONE = "all_done"
    ONE_SUCCEEDED = "one_succeeded"
    ONE_FAILED = "one_failed"
    ONE_DONE = "one_done"
