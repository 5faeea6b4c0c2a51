"""Polyaxon's hyper-parameters as Optuna distributions, each with a decoder back to its value.

Laws Optuna cannot express are still honoured where it matters: ``normal``-family params are
searched through their quantile (a uniform ``u`` that decodes to ``loc + scale *
inverse_cdf(u)``, so a random draw has exactly the normal law), the ``q`` kinds floor after
drawing, ``loguniform`` bounds are natural logs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from statistics import NormalDist
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution

from polyaxon_prefect.search._space import hp_values

__all__ = ["OPTUNA_SCALARS", "Dimension", "optuna_space"]

_QUANTILE_EPS = 1e-6
"""How far from 0 and 1 the quantile of a normal-family param stays (about +-4.75 sigma)."""

OPTUNA_SCALARS = (type(None), bool, int, float, str)
"""The value types Optuna stores as categorical choices as they are."""


@dataclass(frozen=True)
class Dimension:
    """One searched param: its Optuna distribution and how a drawn value becomes Polyaxon's."""

    name: str
    kind: str
    distribution: BaseDistribution
    decode: Callable[[Any], Any]


def _floor(q: float) -> Callable[[float], float]:
    return lambda x: float(f"{math.floor(x / q) * q:.12g}")


def _dimension(name: str, hp: Any, warnings: list[str]) -> Dimension:
    """One param as a ``Dimension``; what the search only approximates goes to ``warnings``."""
    kind = hp.kind
    values = hp_values(hp)
    if values is not None:
        if kind == "pchoice":
            warnings.append(
                f"`{name}` is a pchoice: its weights only shape random draws; the search treats "
                "it as a plain categorical"
            )
        scalar = all(isinstance(v, OPTUNA_SCALARS) and not isinstance(v, date) for v in values)
        if scalar and len({(type(v), v) for v in values}) == len(values):
            return Dimension(name, kind, CategoricalDistribution(tuple(values)), lambda v: v)
        table = list(values)
        return Dimension(
            name, kind, CategoricalDistribution(tuple(range(len(table)))), lambda i: table[i]
        )
    spec = hp.spec
    if kind in ("uniform", "quniform"):
        floor = _floor(spec.q) if spec.q is not None else float
        return Dimension(name, kind, FloatDistribution(spec.low, spec.high), floor)
    if kind in ("loguniform", "qloguniform"):
        dist = FloatDistribution(math.exp(spec.low), math.exp(spec.high), log=True)
        return Dimension(name, kind, dist, _floor(spec.q) if spec.q is not None else float)
    # normal family: searched through the quantile u of the normal law.
    warnings.append(
        f"`{name}` is a {kind}: Optuna has no normal prior, so the search works on its quantile "
        f"u in ({_QUANTILE_EPS:g}, 1 - {_QUANTILE_EPS:g}) and decodes loc + scale * "
        "inverse_cdf(u) (random draws keep the exact law, within about 4.75 sigma)"
    )
    normal = NormalDist(spec.loc, spec.scale)
    log = kind in ("lognormal", "qlognormal")
    q = spec.q

    def from_quantile(u: float) -> float:
        x = normal.inv_cdf(min(max(u, _QUANTILE_EPS), 1 - _QUANTILE_EPS))
        if log:
            x = math.exp(x)
        return _floor(q)(x) if q is not None else float(x)

    bounds = FloatDistribution(_QUANTILE_EPS, 1 - _QUANTILE_EPS)
    return Dimension(name, kind, bounds, from_quantile)


def optuna_space(params: Mapping[str, Any]) -> tuple[dict[str, Dimension], list[str]]:
    """The Optuna search space of a matrix's params, in file order, and what it approximates."""
    warnings: list[str] = []
    space = {name: _dimension(name, hp, warnings) for name, hp in params.items()}
    for name, dim in space.items():
        if isinstance(dim.distribution, CategoricalDistribution):
            first = dim.decode(dim.distribution.choices[0])
            if isinstance(first, date | datetime):
                warnings.append(f"`{name}` lists dates: the search treats them as categories")
    return space, warnings
