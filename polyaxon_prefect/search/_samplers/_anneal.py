"""hyperopt's ``anneal`` algorithm as an Optuna sampler (the ``hyperopt`` kind's ``anneal``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution

from polyaxon_prefect.search._samplers._encoder import Observations, SpaceSampler

__all__ = ["AnnealSampler"]


class AnnealSampler(SpaceSampler):
    """hyperopt's ``anneal``: start from one of the best trials so far (rank drawn from a
    geometric law of mean ``avg_best_idx``) and sample around it in a window that shrinks as
    ``1 / (1 + n * shrink_coef)`` with the number ``n`` of completed trials; a categorical keeps
    the chosen trial's value with a probability that grows the same way."""

    def __init__(
        self,
        space: Mapping[str, BaseDistribution],
        *,
        seed: int | None = None,
        n_startup: int = 1,
        avg_best_idx: float = 2.0,
        shrink_coef: float = 0.1,
    ) -> None:
        super().__init__(space, seed)
        self.n_startup = n_startup
        self.avg_best_idx = avg_best_idx
        self.shrink_coef = shrink_coef

    def _draws_at_random(self, number: int, completed: int) -> bool:
        return completed < max(1, self.n_startup)

    def _suggest(self, observed: Observations, rng: np.random.Generator) -> dict[str, Any]:
        done, values = observed.done, observed.values
        ranked = [done[i] for i in np.argsort(values, kind="stable")]
        rank = min(int(rng.geometric(1.0 / (1.0 + self.avg_best_idx))) - 1, len(ranked) - 1)
        base = ranked[rank]
        width = 1.0 / (1.0 + len(done) * self.shrink_coef)
        params: dict[str, Any] = {}
        for name, how, (start, _stop) in self._encoder.slots:
            if how in ("onehot", "const") or (
                how == "ordinal" and len(self._encoder.choices(name)) <= 2
            ):
                choices = self._encoder.choices(name)
                keep = rng.uniform() > width
                params[name] = base[name] if keep else choices[rng.integers(len(choices))]
                continue
            centre = self._encoder.encode(base)[start]
            low, high = max(0.0, centre - width / 2), min(1.0, centre + width / 2)
            params[name] = self._encoder.decode_one(name, rng.uniform(low, high))
        return params
