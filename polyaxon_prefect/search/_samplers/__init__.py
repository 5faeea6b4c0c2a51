"""Optuna samplers for the searching matrix kinds (``bayes``, ``hyperopt``) and their space.

Laid out as Optuna lays out ``samplers/_gp``:

- ``_optuna_space``: Polyaxon's hyper-parameters as Optuna distributions (``optuna_space``);
- ``_encoder``: the unit-cube encoding and the sampler base shared by the two samplers below;
- ``_gp``: the numpy Gaussian process and its acquisition (math only), for bayes without torch;
- ``_gp_sampler``: ``bayes``: Optuna's ``GPSampler``, else ``GaussianProcessSampler`` on ``_gp``;
- ``_anneal``: hyperopt's ``anneal``.

``hyperopt``'s ``tpe`` is Optuna's ``TPESampler`` with ``multivariate`` and ``constant_liar``
spelled out (their defaults changed in Optuna 5), ``rand`` its ``RandomSampler``.

The samplers of this package draw from a generator seeded by ``(seed, trial number)``, so a
sweep shared by two processes, or resumed, makes the same choices as one that ran in one go.
Optuna's samplers are seeded once: a sweep run in one go is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Mapping

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler, TPESampler

from polyaxon_prefect.search._samplers._anneal import AnnealSampler
from polyaxon_prefect.search._samplers._gp_sampler import GaussianProcessSampler, bayes_sampler
from polyaxon_prefect.search._samplers._optuna_space import Dimension, optuna_space

__all__ = [
    "AnnealSampler",
    "Dimension",
    "GaussianProcessSampler",
    "bayes_sampler",
    "hyperopt_sampler",
    "optuna_space",
]


def hyperopt_sampler(
    algorithm: str, distributions: Mapping[str, BaseDistribution], seed: int
) -> BaseSampler:
    """The sampler of a ``hyperopt`` matrix's ``algorithm`` (``tpe``, ``rand`` or ``anneal``)."""
    if algorithm == "tpe":
        return TPESampler(seed=seed, n_startup_trials=10, multivariate=True, constant_liar=True)
    if algorithm == "rand":
        return RandomSampler(seed=seed)
    return AnnealSampler(distributions, seed=seed)
