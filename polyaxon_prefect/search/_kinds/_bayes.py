"""``bayes``: ``numInitialRuns`` random trials, then one Gaussian-process suggestion per ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.search._kinds._kind_protocol import SearchedKind, rendered, rendered_params
from polyaxon_prefect.search._kinds._random import seeded
from polyaxon_prefect.specs import Bayes

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

    from polyaxon_prefect.search._samplers import Dimension

__all__ = ["BayesKind"]


class BayesKind(SearchedKind[Bayes]):
    name = "bayes"

    def total(self, matrix: Bayes) -> int:
        """``numInitialRuns + maxIterations``."""
        initial = int(rendered("numInitialRuns", matrix.num_initial_runs))
        return initial + int(rendered("maxIterations", matrix.max_iterations))

    def plan(self, matrix: Bayes) -> dict[str, Any]:
        rendered_params(matrix)
        initial = rendered("numInitialRuns", matrix.num_initial_runs)
        iterations = rendered("maxIterations", matrix.max_iterations)
        note = (
            f"{initial} random runs ({seeded(matrix)}), then {iterations} runs suggested one at "
            f"a time by a Gaussian process to {matrix.metric.optimization} `{matrix.metric.name}`"
        )
        return {"kind": self.name, "total": self.total(matrix), "note": note}

    def sampler(
        self, matrix: Bayes, space: Mapping[str, Dimension], *, seed: int, deterministic: bool
    ) -> tuple[BaseSampler, list[str]]:
        from polyaxon_prefect.search._samplers import bayes_sampler

        distributions = {name: dim.distribution for name, dim in space.items()}
        return bayes_sampler(matrix, distributions, seed, deterministic)
