"""What a sweep study hands out (``Suggestion``) and shows back (``TrialRecord``).

Kept apart from ``_study`` so that the matrix kinds, which read records to decide what comes
next, need neither Optuna nor the study class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.specs import Status

__all__ = ["PENDING", "Suggestion", "SweepStudyError", "TrialRecord", "TrialStatus"]

PENDING: Final = "pending"
"""A trial the study handed out that has not started: the study's own word, not a Polyaxon
status, so it is kept apart from `Status`."""

TrialStatus = Status | Literal["pending"]


class SweepStudyError(PolyaxonPrefectError):
    """The sweep's study cannot be created or opened as asked (exists, missing, other kind)."""


@dataclass(frozen=True)
class Suggestion:
    """One trial to launch now."""

    number: int
    index: int
    params: dict[str, Any]
    attrs: dict[str, Any]


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the sweep sees it (the latest attempt of its index)."""

    number: int
    index: int
    params: dict[str, Any]
    status: TrialStatus
    value: float | None
    outputs: dict[str, Any]
    metrics: dict[str, Any]
    uuid: str | None
    attrs: dict[str, Any]
    message: str = ""
    gpu_hours: float | None = None
    """GPUs held x wall time, in hours; None: it asked for no GPU."""
    unfinished: bool = False
    """Stopped by a stop of the sweep (not pruned by a policy): ``--resume`` runs it again."""
