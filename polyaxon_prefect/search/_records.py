"""What a sweep study hands out (``Suggestion``) and shows back (``TrialRecord``).

Kept apart from ``_study`` so that the matrix kinds, which read records to decide what comes
next, need neither Optuna nor the study class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["Suggestion", "SweepStudyError", "TrialRecord"]


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
    status: str
    value: float | None
    outputs: dict[str, Any]
    metrics: dict[str, Any]
    uuid: str | None
    attrs: dict[str, Any]
    message: str = ""
