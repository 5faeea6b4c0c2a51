"""Search plans that need no results: grid and mapping suggestions, the Hyperband schedule, and
``matrix_plan``, the JSON summary ``compile`` prints so a user sees the cost before running.

Pure functions over the spec models, so the planner can be tested (and printed by ``compile``)
without running anything.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction
from typing import Any

from polyaxon_prefect.specs._matrix import GridSearch, Mapping

__all__ = [
    "Bracket",
    "grid_suggestions",
    "hyperband_schedule",
    "mapping_suggestions",
    "matrix_plan",
]


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


# -- plans for ``compile`` ----------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Dates as ISO strings, containers recursively; anything else JSON cannot hold as text."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _rendered(label: str, value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError(f"`{label}` is a template ({value!r}): known at run time")
    return value


def _hyperband_plan(matrix: Any) -> dict[str, Any]:
    max_iterations = _rendered("maxIterations", matrix.max_iterations)
    eta = _rendered("eta", matrix.eta)
    cast = matrix.resource.cast_value
    brackets = hyperband_schedule(max_iterations, eta)
    plan_brackets = [
        {
            "bracket": bracket.s,
            "rungs": [
                {"rung": k, "configs": configs, "resource": cast(resource)}
                for k, (configs, resource) in enumerate(bracket.rungs)
            ],
        }
        for bracket in brackets
    ]
    total = sum(rung["configs"] for b in plan_brackets for rung in b["rungs"])
    budget = sum(rung["configs"] * rung["resource"] for b in plan_brackets for rung in b["rungs"])
    return {
        "kind": "hyperband",
        "total": total,
        "budget": budget,
        "resource": matrix.resource.name,
        "brackets": plan_brackets,
    }


def _sampled_plan(matrix: Any) -> dict[str, Any]:
    from polyaxon_prefect.search._space import space_size

    kind = matrix.kind
    params = matrix.hp_params()
    for name, hp in params.items():
        if hp.is_ref:
            raise ValueError(f"param `{name}` is a template ({hp.value!r}): known at run time")
    seed = getattr(matrix, "seed", None)
    seeded = "unseeded" if seed is None else f"seed {seed}"
    if kind == "random":
        num_runs = _rendered("numRuns", matrix.num_runs)
        size = space_size(params)
        total = num_runs if size is None else min(num_runs, size)
        capped = f", capped at the {size} distinct points of the space" if total < num_runs else ""
        note = f"{total} distinct random draws ({seeded}){capped}"
    elif kind == "bayes":
        initial = _rendered("numInitialRuns", matrix.num_initial_runs)
        iterations = _rendered("maxIterations", matrix.max_iterations)
        total = initial + iterations
        note = (
            f"{initial} random runs ({seeded}), then {iterations} runs suggested one at a time "
            f"by a Gaussian process to {matrix.metric.optimization} `{matrix.metric.name}`"
        )
    elif kind == "hyperopt":
        num_runs = _rendered("numRuns", matrix.num_runs)
        # As the sweep runs it (`SweepStudy`): without maxIterations, one round of numRuns.
        iterations = _rendered("maxIterations", matrix.max_iterations) or 1
        total = num_runs * iterations
        rounds = f"for {iterations} iteration{'s' if iterations != 1 else ''}"
        note = (
            f"{num_runs} `{matrix.algorithm}` suggestions per iteration {rounds} ({seeded}), "
            f"to {matrix.metric.optimization} `{matrix.metric.name}`"
        )
    else:  # iterative
        iterations = _rendered("maxIterations", matrix.max_iterations)
        total = None
        tuner = matrix.tuner.hub_ref if matrix.tuner else "a tuner component"
        note = (
            f"up to {iterations} iterations of suggestions from `{tuner}`; "
            "the number of runs depends on what it suggests"
        )
    return {"kind": kind, "total": total, "note": note}


def matrix_plan(matrix: Any) -> dict[str, Any]:
    """What a matrix will run, as a JSON-able dict.

    - grid, mapping: ``{"kind", "total", "suggestions": [...]}``, every suggestion in order;
    - hyperband: ``{"kind", "total", "budget", "resource", "brackets": [{"bracket", "rungs":
      [{"rung", "configs", "resource"}]}]}``: ``total`` counts runs (a config promoted to the
      next rung runs again), ``budget`` sums ``configs * resource``;
    - random, bayes, hyperopt, iterative: ``{"kind", "total", "note"}`` (``total`` None when
      open-ended).

    A matrix whose params or counts are templates gets ``total`` None and a note saying so.
    """
    kind = matrix.kind
    try:
        if kind == "grid":
            suggestions = grid_suggestions(matrix)
        elif kind == "mapping":
            suggestions = mapping_suggestions(matrix)
        elif kind == "hyperband":
            return _hyperband_plan(matrix)
        else:
            return _sampled_plan(matrix)
    except ValueError as error:
        return {"kind": kind, "total": None, "note": str(error)}
    return {"kind": kind, "total": len(suggestions), "suggestions": _jsonable(suggestions)}
