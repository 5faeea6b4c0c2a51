"""Hyperparameter search planning: what to run for a matrix, independent of the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.search._kinds import (
    KINDS,
    MatrixKind,
    StudyHandle,
    UnknownMatrixKindError,
    get_kind,
)
from polyaxon_prefect.search._matrix_plan import (
    Bracket,
    grid_points,
    grid_suggestions,
    hyperband_schedule,
    mapping_suggestions,
    matrix_plan,
)
from polyaxon_prefect.search._progress import (
    BEST_OVER_STEPS,
    Best,
    JobProgress,
    SweepProgress,
    SweepTracker,
    best_over_steps,
    format_eta,
    job_eta,
    metric_values,
    objective_value,
    progress_words,
    ranked_by,
    sweep_eta,
    trial_line,
)
from polyaxon_prefect.search._random_draws import random_suggestions
from polyaxon_prefect.search._space import hp_values, reachable_values, sample_hp, space_size
from polyaxon_prefect.search._stopping import RunSummary, StopDecision, check_early_stopping
from polyaxon_prefect.search._sweep import data_section, read_data_section, trial_results
from polyaxon_prefect.search._trial_records import Suggestion, SweepStudyError, TrialRecord

if TYPE_CHECKING:
    from polyaxon_prefect.search._optuna._extend import extend_study
    from polyaxon_prefect.search._optuna._study import SweepStudy

__all__ = [
    "BEST_OVER_STEPS",
    "KINDS",
    "Best",
    "Bracket",
    "JobProgress",
    "MatrixKind",
    "RunSummary",
    "StopDecision",
    "StudyHandle",
    "Suggestion",
    "SweepProgress",
    "SweepStudy",
    "SweepStudyError",
    "SweepTracker",
    "TrialRecord",
    "UnknownMatrixKindError",
    "best_over_steps",
    "check_early_stopping",
    "data_section",
    "extend_study",
    "format_eta",
    "get_kind",
    "grid_points",
    "grid_suggestions",
    "hp_values",
    "hyperband_schedule",
    "job_eta",
    "mapping_suggestions",
    "matrix_plan",
    "metric_values",
    "objective_value",
    "progress_words",
    "random_suggestions",
    "ranked_by",
    "reachable_values",
    "read_data_section",
    "sample_hp",
    "space_size",
    "sweep_eta",
    "trial_line",
    "trial_results",
]

# The Optuna-backed study loads on first use: planning and ``compile`` never import Optuna.
__getattr__ = lazy_attributes(
    __name__, {"SweepStudy": "_optuna._study", "extend_study": "_optuna._extend"}
)
