"""Random search: ``numRuns`` distinct draws from the params, reproducible from a seed.

Like hypertune, suggestions are distinct (equality of the params dict) and, when every param is
discrete, ``numRuns`` is capped at the size of the space. Unlike hypertune, the generator is a
``numpy.random.Generator`` (so draws are not bit-identical to Polyaxon's) and ``seed: 0`` is a
seed like any other (hypertune treats 0 as "no seed").

Drawing distinct points by rejection slows down as the space fills up, so a small discrete space
(at most twice the runs asked for) is drawn without replacement directly: each point's key is
``log(weight) + Gumbel noise`` and the points are taken by decreasing key, which has exactly the
law of "draw, and draw again until unseen". A distribution that cannot give enough distinct
values (e.g. a coarse ``quniform``) yields fewer suggestions instead of looping forever.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.search._space import reachable_values, sample_hp, space_size
from polyaxon_prefect.specs import MAX_GRID_ENV, HpParam, Matrix, max_grid

if TYPE_CHECKING:
    import numpy

__all__ = ["random_suggestions"]

_ENUMERATE_LIMIT = 1_000_000
"""Largest discrete space enumerated to finish a draw that rejection could not."""


def _freeze(value: object) -> Any:
    """A hashable stand-in with the same equality as the value (lists and dicts included)."""
    if isinstance(value, dict):
        return ("__dict__", frozenset((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _weights(hp: HpParam) -> list[float]:
    """The probability of each reachable value of a discrete hp."""
    if hp.kind == "pchoice":
        return [p for p in hp.spec.probabilities if p > 0]
    values = reachable_values(hp) or []
    return [1.0 / len(values)] * len(values)


def _without_replacement(
    params: Mapping[str, Any],
    rng: numpy.random.Generator,
    count: int,
    seen: set[Any],
) -> list[dict[str, Any]]:
    """``count`` unseen points of a discrete space, in the law of repeated rejection draws."""
    import numpy as np

    names = list(params)
    columns = [reachable_values(params[name]) or [] for name in names]
    weights = [_weights(params[name]) for name in names]
    points: list[tuple[Any, ...]] = []
    log_weights: list[float] = []
    for index in itertools.product(*(range(len(column)) for column in columns)):
        point = tuple(column[i] for column, i in zip(columns, index, strict=True))
        if _freeze(point) in seen:
            continue
        points.append(point)
        log_weights.append(math.fsum(math.log(w[i]) for w, i in zip(weights, index, strict=True)))
    if not points:
        return []
    keys = np.asarray(log_weights) + rng.gumbel(size=len(points))
    order = np.argsort(-keys, kind="stable")[:count].tolist()
    return [dict(zip(names, points[i], strict=True)) for i in order]


def _rendered(matrix: Matrix, label: str, value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError(
            f"`{label}` of the {matrix.kind} matrix is a template ({value!r}): "
            "render it before sampling"
        )
    return value


def random_suggestions(
    matrix: Matrix, *, seed: int | None = None, num_runs: int | None = None
) -> list[dict[str, Any]]:
    """``numRuns`` distinct suggestions drawn from ``matrix.params`` (any matrix with params).

    ``seed`` defaults to ``matrix.seed`` (no seed: fresh entropy); ``num_runs`` to
    ``matrix.numRuns`` (so hyperband or bayes can ask for their own counts). The same seed gives
    the same list. When every param is discrete, the count is capped at the space size.
    """
    import numpy as np

    params = matrix.hp_params()
    if not params:
        raise ValueError(f"the {matrix.kind} matrix has no params to sample")
    if num_runs is None:
        num_runs = _rendered(matrix, "numRuns", getattr(matrix, "num_runs", None))
    if num_runs is None:
        raise ValueError(f"random suggestions need a number of runs; the {matrix.kind} has none")
    limit = max_grid()
    if num_runs > limit:  # a count rendered at run time: `check` could not refuse it
        raise ValueError(
            f"the {matrix.kind} matrix asks for {num_runs:,} trials, more than the limit of "
            f"{limit:,} ({MAX_GRID_ENV}): ask for fewer, or raise it"
        )
    if seed is None:
        seed = _rendered(matrix, "seed", getattr(matrix, "seed", None))
    size = space_size(params)
    target = num_runs if size is None else min(num_runs, size)
    rng = np.random.default_rng(seed)
    if size is not None and size <= 2 * target:
        return _without_replacement(params, rng, target, set())

    names = list(params)
    suggestions: list[dict[str, Any]] = []
    seen: set[Any] = set()
    budget = 100 * target + 1000
    drawn = 0
    while len(suggestions) < target and drawn < budget:
        batch = target - len(suggestions)
        columns = [sample_hp(params[name], rng, batch) for name in names]
        drawn += batch
        for point in zip(*columns, strict=True):
            key = _freeze(point)
            if key in seen:
                continue
            seen.add(key)
            suggestions.append(dict(zip(names, point, strict=True)))
            if len(suggestions) == target:
                break
    missing = target - len(suggestions)
    if missing and size is not None and size <= _ENUMERATE_LIMIT:
        suggestions += _without_replacement(params, rng, missing, seen)
    return suggestions
