"""The values and the sampling law of every hyper-parameter kind, as Polyaxon defines them.

Discrete kinds are enumerated by the spec models (``to_values()``); distributions are drawn here
with a ``numpy.random.Generator`` following hypertune's samplers, surprises included (spec 7, 13):

- ``loguniform`` bounds are natural logs: the value is ``exp(uniform(low, high))``;
- the ``q`` kinds FLOOR: ``floor(x / q) * q`` (the docs say round; the code floors);
- ``lognormal`` is ``exp(normal(loc, scale))``;
- a ``size`` in a distribution's value is ignored when sampling, as hypertune does: it overwrites
  it with the sample size, so each suggestion is one number.

numpy is imported by the callers that draw, never at module import, so ``check`` stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy

    from polyaxon_prefect.specs import HpParam

__all__ = ["hp_values", "reachable_values", "sample_hp", "space_size"]

_UNIFORM_FAMILY = frozenset({"uniform", "quniform", "loguniform", "qloguniform"})
_NORMAL_FAMILY = frozenset({"normal", "qnormal", "lognormal", "qlognormal"})


def _require_rendered(hp: HpParam) -> None:
    if hp.is_ref:
        raise ValueError(f"`{hp.kind}` value {hp.value!r} is a template: render it before sampling")


def hp_values(hp: HpParam) -> list[Any] | None:
    """Every value of a discrete hp in enumeration order; None for a continuous distribution.

    ``pchoice`` counts as discrete (its values, in the order written), as in hypertune.
    """
    if hp.is_continuous:
        return None
    return hp.to_values()


def reachable_values(hp: HpParam) -> list[Any] | None:
    """The values a random draw can produce: ``hp_values`` less zero-probability ``pchoice``
    values, which would otherwise make the search wait forever for a value that never comes."""
    if hp.kind == "pchoice":
        _require_rendered(hp)
        spec = hp.spec
        return [v for v, p in zip(spec.values, spec.probabilities, strict=True) if p > 0]
    return hp_values(hp)


def space_size(params: Mapping[str, Any]) -> int | None:
    """How many distinct suggestions a random draw can reach; None if any param is continuous.

    The product of each discrete param's reachable values (a ``pchoice`` value with probability 0
    does not count).
    """
    size = 1
    for hp in params.values():
        if hp.is_continuous:
            return None
        if hp.kind == "pchoice":
            size *= len(reachable_values(hp) or ())
        else:
            _require_rendered(hp)
            size *= hp.length  # counted: a `range` of 10^7 values is not listed
    return size


def _quantise(values: numpy.ndarray, q: float) -> list[float]:
    """``floor(x / q) * q`` as hypertune computes it, tidied to 12 significant digits so that
    ``3 * 0.1`` reads ``0.3`` (a difference far below any sampling resolution)."""
    import numpy as np

    steps = np.floor_divide(values, q) * q
    return [float(f"{value:.12g}") for value in steps.tolist()]


def sample_hp(hp: HpParam, rng: numpy.random.Generator, size: int) -> list[Any]:
    """``size`` independent draws of one hp, as plain Python values.

    Discrete kinds draw uniformly among their values (``pchoice`` by its weights); the
    distributions follow hypertune's formulas (module docstring).
    """
    import numpy as np

    _require_rendered(hp)
    kind = hp.kind
    spec = hp.spec
    if kind == "pchoice":
        weights = np.asarray(spec.probabilities, dtype=float)
        indexes = rng.choice(len(spec.values), size=size, p=weights / weights.sum())
        return [spec.values[i] for i in indexes.tolist()]
    if hp.is_discrete:
        values = hp.to_values()
        return [values[i] for i in rng.integers(0, len(values), size=size).tolist()]
    if kind in _UNIFORM_FAMILY:
        draws = rng.uniform(spec.low, spec.high, size=size)
        if kind in ("loguniform", "qloguniform"):
            draws = np.exp(draws)
    elif kind in _NORMAL_FAMILY:
        if kind in ("lognormal", "qlognormal"):
            draws = rng.lognormal(mean=spec.loc, sigma=spec.scale, size=size)
        else:
            draws = rng.normal(loc=spec.loc, scale=spec.scale, size=size)
    else:  # pragma: no cover - every kind is handled above
        raise ValueError(f"unknown hyperparameter kind {kind!r}")
    if spec.q is not None:
        return _quantise(draws, spec.q)
    return [float(value) for value in draws.tolist()]
