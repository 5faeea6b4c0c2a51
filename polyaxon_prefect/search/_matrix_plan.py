"""``matrix_plan``: the JSON summary ``compile`` prints, so a user sees the cost before running.

Each matrix kind plans itself (``_kinds``); this module only turns "known at run time" into a
note. Pure functions over the spec models, so the planner can be tested (and printed by
``compile``) without Optuna or anything running.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.search._kinds import get_kind
from polyaxon_prefect.search._kinds._grid import grid_points, grid_suggestions
from polyaxon_prefect.search._kinds._hyperband import Bracket, hyperband_schedule
from polyaxon_prefect.search._kinds._mapping import mapping_suggestions
from polyaxon_prefect.specs import Matrix

__all__ = [
    "Bracket",
    "grid_points",
    "grid_suggestions",
    "hyperband_schedule",
    "mapping_suggestions",
    "matrix_plan",
]


def matrix_plan(matrix: Matrix) -> dict[str, Any]:
    """What a matrix will run, as a JSON-able dict.

    - grid, mapping: ``{"kind", "total", "suggestions": [...]}``, every suggestion in order,
      up to ``PLAN_LISTED`` (1000); a larger one is ``{"kind", "total", "first": [...],
      "note"}``: its first ``PLAN_SHOWN`` (10) points, counted, never listed in full;
    - hyperband: ``{"kind", "total", "budget", "resource", "brackets": [{"bracket", "rungs":
      [{"rung", "configs", "resource"}]}]}``: ``total`` counts runs (a config promoted to the
      next rung runs again), ``budget`` sums ``configs * resource``;
    - random, bayes, hyperopt, iterative: ``{"kind", "total", "note"}`` (``total`` None when
      open-ended).

    ``total`` is the kind's ``total``, the number ``SweepStudy.total`` reports too. A matrix
    whose params or counts are templates gets ``total`` None and a note saying so.

    Raises:
        UnknownMatrixKindError: the matrix kind has no entry in the registry.
    """
    kind = get_kind(matrix.kind)
    try:
        return kind.plan(matrix)
    except ValueError as error:
        return {"kind": matrix.kind, "total": None, "note": str(error)}
