"""Search plans that need no results: grid and mapping suggestions, and the Hyperband schedule.

Pure functions over the spec models, so the planner can be tested (and printed by ``check``)
without running anything.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from polyaxon_prefect.specs._matrix import GridSearch, Mapping

__all__ = ["Bracket", "grid_suggestions", "hyperband_schedule", "mapping_suggestions"]


def grid_suggestions(grid: GridSearch) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as Polyaxon orders them, cut to ``numRuns``.

    ``itertools.product`` over the params in the order written: the last param varies fastest.
    """
    if not isinstance(grid.num_runs, int | None):
        raise ValueError(
            f"grid `numRuns` is a template ({grid.num_runs!r}): render it before planning"
        )
    names = list(grid.params)
    columns = [grid.params[name].to_values() for name in names]
    combos = itertools.product(*columns)
    if grid.num_runs is not None:
        combos = itertools.islice(combos, grid.num_runs)
    return [dict(zip(names, combo, strict=True)) for combo in combos]


def mapping_suggestions(mapping: Mapping) -> list[dict[str, Any]]:
    """One suggestion per entry of ``values``, each a fresh dict."""
    if isinstance(mapping.values, str):
        raise ValueError(
            f"mapping `values` is a template ({mapping.values!r}): render it before planning"
        )
    return [dict(item) for item in mapping.values]


@dataclass(frozen=True)
class Bracket:
    """One Hyperband bracket: ``n`` configs start at resource ``r``.

    ``rungs`` lists ``(configs, resource)`` per round of successive halving: rung ``k`` runs
    ``floor(n / eta**k)`` configs with resource ``r * eta**k``; the last rung reaches
    ``maxIterations``.
    """

    s: int
    n: int
    r: float
    rungs: tuple[tuple[int, float], ...]


def _s_max(max_iterations: int, eta: Fraction) -> int:
    """The largest ``s`` with ``eta**s <= maxIterations``, in exact arithmetic.

    ``int(log(243) / log(3))`` is 4 in floating point, which silently drops a bracket.
    """
    s = 0
    while eta ** (s + 1) <= max_iterations:
        s += 1
    return s


def hyperband_schedule(max_iterations: int, eta: float) -> list[Bracket]:
    """The brackets of Hyperband (Li et al., JMLR 2018), most aggressive first.

    ``s_max = floor(log_eta(R))``, ``B = (s_max + 1) * R``; bracket ``s`` starts
    ``n = ceil(B / R * eta**s / (s + 1))`` configs at ``r = R * eta**-s``. Each rung keeps the
    best ``floor(n / eta**k)``, i.e. a third per rung for ``eta = 3``, as the paper does (Polyaxon's
    own promotion divides once too often; spec 6.1).
    """
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
        raise ValueError(f"maxIterations must be an integer, got {max_iterations!r}")
    if max_iterations < 1:
        raise ValueError(f"maxIterations must be at least 1, got {max_iterations}")
    if not eta > 1:
        raise ValueError(f"eta must be greater than 1, got {eta!r}")
    big_r = max_iterations
    exact_eta = Fraction(eta)
    s_max = _s_max(big_r, exact_eta)
    brackets = []
    for s in range(s_max, -1, -1):
        n = math.ceil(Fraction(s_max + 1) * exact_eta**s / (s + 1))
        r = Fraction(big_r) / exact_eta**s
        rungs = tuple((math.floor(n / exact_eta**k), float(r * exact_eta**k)) for k in range(s + 1))
        brackets.append(Bracket(s=s, n=n, r=float(r), rungs=rungs))
    return brackets
