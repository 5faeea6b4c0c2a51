"""Hyperparameter search planning: what to run for a matrix, independent of the engine."""

from __future__ import annotations

from polyaxon_prefect.search._plan import (
    Bracket,
    grid_suggestions,
    hyperband_schedule,
    mapping_suggestions,
    matrix_plan,
)
from polyaxon_prefect.search._random import random_suggestions
from polyaxon_prefect.search._space import hp_values, reachable_values, sample_hp, space_size
from polyaxon_prefect.search._stopping import RunSummary, StopDecision, check_early_stopping

__all__ = [
    "Bracket",
    "RunSummary",
    "StopDecision",
    "check_early_stopping",
    "grid_suggestions",
    "hp_values",
    "hyperband_schedule",
    "mapping_suggestions",
    "matrix_plan",
    "random_suggestions",
    "reachable_values",
    "sample_hp",
    "space_size",
]
