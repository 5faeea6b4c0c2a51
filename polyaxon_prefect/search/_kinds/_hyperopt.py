"""``hyperopt``: ``numRuns`` suggestions per iteration from ``tpe``, ``rand`` or ``anneal``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.search._kinds._kind_protocol import SearchedKind, rendered, rendered_params
from polyaxon_prefect.search._kinds._random import seeded
from polyaxon_prefect.specs import Hyperopt

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

    from polyaxon_prefect.search._samplers import Dimension

__all__ = ["HyperoptKind"]


class HyperoptKind(SearchedKind[Hyperopt]):
    name = "hyperopt"

    def _rounds(self, matrix: Hyperopt) -> tuple[int, int]:
        num_runs = int(rendered("numRuns", matrix.num_runs))
        # without maxIterations, one round of numRuns
        iterations = int(rendered("maxIterations", matrix.max_iterations) or 1)
        return num_runs, iterations

    def total(self, matrix: Hyperopt) -> int:
        """``numRuns * maxIterations``; ``numRuns`` alone without ``maxIterations``."""
        num_runs, iterations = self._rounds(matrix)
        return num_runs * iterations

    def plan(self, matrix: Hyperopt) -> dict[str, Any]:
        rendered_params(matrix)
        num_runs, iterations = self._rounds(matrix)
        rounds = f"for {iterations} iteration{'s' if iterations != 1 else ''}"
        note = (
            f"{num_runs} `{matrix.algorithm}` suggestions per iteration {rounds} "
            f"({seeded(matrix)}), to {matrix.metric.optimization} `{matrix.metric.name}`"
        )
        return {"kind": self.name, "total": self.total(matrix), "note": note}

    def sampler(
        self, matrix: Hyperopt, space: Mapping[str, Dimension], *, seed: int, deterministic: bool
    ) -> tuple[BaseSampler, list[str]]:
        from polyaxon_prefect.search._samplers import hyperopt_sampler

        distributions = {name: dim.distribution for name, dim in space.items()}
        return hyperopt_sampler(matrix.algorithm, distributions, seed), []
