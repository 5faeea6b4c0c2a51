"""Hyperparameter search planning: what to run for a matrix, independent of the engine."""

from __future__ import annotations

from polyaxon_prefect.search._plan import (
    Bracket,
    grid_suggestions,
    hyperband_schedule,
    mapping_suggestions,
)

__all__ = ["Bracket", "grid_suggestions", "hyperband_schedule", "mapping_suggestions"]
