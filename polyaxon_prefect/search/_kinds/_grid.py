"""``grid``: every combination of the params, queued in order when the study is created."""

from __future__ import annotations

import itertools
import math
from typing import Any

from polyaxon_prefect.search._kinds._base import BaseKind, jsonable
from polyaxon_prefect.specs import GridSearch

__all__ = ["Grid", "grid_suggestions"]


def _num_runs(grid: GridSearch) -> int | None:
    if not isinstance(grid.num_runs, int | None):
        raise ValueError(
            f"grid `numRuns` is a template ({grid.num_runs!r}): render it before planning"
        )
    return grid.num_runs


def grid_suggestions(grid: GridSearch) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as Polyaxon orders them, cut to ``numRuns``.

    ``itertools.product`` over the params in the order written: the last param varies fastest.
    """
    num_runs = _num_runs(grid)
    names = list(grid.params)
    columns = [grid.params[name].to_values() for name in names]
    combos = itertools.islice(itertools.product(*columns), num_runs)
    return [dict(zip(names, combo, strict=True)) for combo in combos]


class Grid(BaseKind[GridSearch]):
    name = "grid"

    def total(self, matrix: GridSearch) -> int:
        """The product of the params' value counts, cut to ``numRuns`` (nothing enumerated)."""
        num_runs = _num_runs(matrix)
        size = math.prod(len(hp.to_values()) for hp in matrix.params.values())
        return size if num_runs is None else min(size, num_runs)

    def plan(self, matrix: GridSearch) -> dict[str, Any]:
        suggestions = grid_suggestions(matrix)
        return {"kind": self.name, "total": len(suggestions), "suggestions": jsonable(suggestions)}

    def initial_queue(self, matrix: GridSearch, seed: int) -> list[dict[str, Any]]:
        return grid_suggestions(matrix)
