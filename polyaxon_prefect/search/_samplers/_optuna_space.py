"""Polyaxon's hyper-parameters as Optuna distributions, each with a decoder back to its value.

Laws Optuna cannot express are still honoured where it matters: ``normal``-family params are
searched through their quantile (a uniform ``u`` that decodes to ``loc + scale *
inverse_cdf(u)``, so a random draw has exactly the normal law), the ``q`` kinds floor after
drawing, ``loguniform`` bounds are natural logs. What this only approximates is warned about
when the file is loaded (``specs/matrix/_matrix_warnings``), so ``check`` says it too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from statistics import NormalDist
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution

from polyaxon_prefect.search._space import hp_values
from polyaxon_prefect.specs import HpParam
from polyaxon_prefect.specs.matrix._matrix_warnings import QUANTILE_EPS as _QUANTILE_EPS

__all__ = ["OPTUNA_SCALARS", "Dimension", "optuna_space"]

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


def _dimension(name: str, hp: HpParam) -> Dimension:
    """One param as a ``Dimension`` (a ``pchoice`` as a plain categorical)."""
    kind = hp.kind
    values = hp_values(hp)
    if values is not None:
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


def optuna_space(params: Mapping[str, Any]) -> dict[str, Dimension]:
    """The Optuna search space of a matrix's params, in file order."""
    return {name: _dimension(name, hp) for name, hp in params.items()}
