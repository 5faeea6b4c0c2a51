"""``random``: ``numRuns`` distinct draws, queued when the study is created."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.search._kinds._kind_protocol import BaseKind, rendered, rendered_params
from polyaxon_prefect.search._random_draws import random_suggestions
from polyaxon_prefect.search._space import space_size
from polyaxon_prefect.specs import RandomSearch

__all__ = ["Random", "seeded"]


def seeded(matrix: object) -> str:
    """How a plan note describes the matrix's seed."""
    seed = getattr(matrix, "seed", None)
    return "unseeded" if seed is None else f"seed {seed}"


class Random(BaseKind[RandomSearch]):
    name = "random"

    def _counts(self, matrix: RandomSearch) -> tuple[int, int | None]:
        params = rendered_params(matrix)
        num_runs = int(rendered("numRuns", matrix.num_runs))
        return num_runs, space_size(params)

    def total(self, matrix: RandomSearch) -> int:
        """``numRuns``, capped at the number of distinct points a discrete space has."""
        num_runs, size = self._counts(matrix)
        return num_runs if size is None else min(num_runs, size)

    def plan(self, matrix: RandomSearch) -> dict[str, Any]:
        num_runs, size = self._counts(matrix)
        total = self.total(matrix)
        capped = f", capped at the {size} distinct points of the space" if total < num_runs else ""
        note = f"{total} distinct random draws ({seeded(matrix)}){capped}"
        return {"kind": self.name, "total": total, "note": note}

    def initial_queue(self, matrix: RandomSearch, seed: int) -> list[dict[str, Any]]:
        return random_suggestions(matrix, seed=seed)
