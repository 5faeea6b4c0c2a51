"""``hyperband``: synchronous brackets of successive halving, run one after the other.

A rung's configs are queued when the previous rung has finished (``ask`` returns None while one
is in flight); the best ``floor(n / eta)`` by the metric are promoted with the resource
multiplied by ``eta``. The rung engine keeps its position in the study attrs (``hb_current``,
``hb_done``), so any process of the sweep can advance it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from polyaxon_prefect.search._kinds._kind_protocol import BaseKind, StudyHandle, rendered
from polyaxon_prefect.search._random_draws import random_suggestions
from polyaxon_prefect.search._space import space_size
from polyaxon_prefect.search._trial_records import PENDING, TrialRecord
from polyaxon_prefect.specs import Hyperband, Status

__all__ = ["Bracket", "HyperbandKind", "hyperband_schedule"]

_BRACKET_SEED_STEP = 7919
"""Bracket ``b`` draws its configs with ``seed + 7919 * b``: brackets differ, and reproduce."""


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


def _schedule(matrix: Hyperband) -> list[Bracket]:
    return hyperband_schedule(
        int(rendered("maxIterations", matrix.max_iterations)), float(rendered("eta", matrix.eta))
    )


def _capped(
    rungs: tuple[tuple[int, float], ...], first: int, eta: float
) -> list[tuple[int, float]]:
    """A bracket's rungs when only ``first`` configs could be drawn for rung 0."""
    exact = Fraction(eta)
    return [
        (math.floor(first / exact**k) if k else first, resource)
        for k, (_count, resource) in enumerate(rungs)
    ]


def _rung_counts(matrix: Hyperband) -> list[list[tuple[int, float]]]:
    """Per bracket, the ``(configs, resource)`` of each rung, with rung 0 capped at the
    distinct points a small discrete space has (random search cannot draw more)."""
    schedule = _schedule(matrix)
    params = matrix.hp_params()
    size = None if any(hp.is_ref for hp in params.values()) else space_size(params)
    eta = float(rendered("eta", matrix.eta))
    return [_capped(b.rungs, b.n if size is None else min(b.n, size), eta) for b in schedule]


class HyperbandKind(BaseKind[Hyperband]):
    name = "hyperband"

    def total(self, matrix: Hyperband) -> int:
        """Runs over every rung of every bracket (a promoted config runs again)."""
        return sum(count for rungs in _rung_counts(matrix) for count, _ in rungs)

    def plan(self, matrix: Hyperband) -> dict[str, Any]:
        """The brackets and rungs, with ``budget``: the sum of ``configs * resource``."""
        cast = matrix.resource.cast_value
        counts = _rung_counts(matrix)
        brackets = [
            {
                "bracket": bracket.s,
                "rungs": [
                    {"rung": k, "configs": configs, "resource": cast(resource)}
                    for k, (configs, resource) in enumerate(rungs)
                ],
            }
            for bracket, rungs in zip(_schedule(matrix), counts, strict=True)
        ]
        budget = sum(configs * cast(resource) for rungs in counts for configs, resource in rungs)
        return {
            "kind": self.name,
            "total": self.total(matrix),
            "budget": budget,
            "resource": matrix.resource.name,
            "brackets": brackets,
        }

    def advance(self, study: StudyHandle) -> None:
        """Queue the first rung at creation, then the next rung (or bracket) once the
        current one has finished."""
        attrs = study.study_attrs()
        if attrs.get("hb_done") or attrs.get("stop_reason") is not None:
            return
        current = attrs.get("hb_current")
        if current is None:
            _enqueue_rung(study, 0, 0, [])
            return
        bracket, rung = current
        mine = [
            r
            for r in study.history()
            if r.attrs.get("bracket") == bracket and r.attrs.get("rung") == rung
        ]
        if any(r.status in (PENDING, Status.RUNNING) for r in mine):
            return
        plan = _drawn_plan(study)
        keep = plan[bracket][rung + 1][0] if rung + 1 < len(plan[bracket]) else 0
        promoted = _best(mine, keep, maximize=study.maximize)
        if promoted:
            name = study.matrix.resource.name
            configs = [
                (int(r.attrs["config"]), {k: v for k, v in r.params.items() if k != name})
                for r in sorted(promoted, key=lambda r: r.attrs["config"])
            ]
            # the promoted order is by config id, so indexes stay deterministic
            _enqueue_rung(study, bracket, rung + 1, configs)
        elif bracket + 1 < len(plan):
            _enqueue_rung(study, bracket + 1, 0, [])
        else:
            study.set_study_attr("hb_done", True)

    def is_finished(self, study: StudyHandle) -> bool:
        return bool(study.study_attrs().get("hb_done"))


def _best(records: list[TrialRecord], keep: int, *, maximize: bool) -> list[TrialRecord]:
    """The ``keep`` succeeded records with the best value (ties: lowest index first)."""
    scored = [(r.value, r) for r in records if r.status == Status.SUCCEEDED and r.value is not None]
    scored.sort(key=lambda item: (-item[0] if maximize else item[0], item[1].index))
    return [r for _, r in scored[:keep]]


# -- the rung engine -----------------------------------------------------------------------------


def _configs(study: StudyHandle, bracket: int, count: int) -> list[dict[str, Any]]:
    seed = study.seed + _BRACKET_SEED_STEP * bracket
    return random_suggestions(study.matrix, seed=seed, num_runs=count)


def _drawn_plan(study: StudyHandle) -> list[list[tuple[int, float]]]:
    """Per (bracket, rung) in run order: the (configs, resource) of this study, rung 0 being
    what random search actually drew (``_rung_counts`` unless a quantised distribution has
    fewer distinct values than the bracket asks for)."""
    cached: list[list[tuple[int, float]]] | None = study.cache.get("hyperband")
    if cached is not None:
        return cached
    eta = float(rendered("eta", study.matrix.eta))
    plan = [
        _capped(entry.rungs, len(_configs(study, bracket, entry.n)), eta)
        for bracket, entry in enumerate(_schedule(study.matrix))
    ]
    study.cache["hyperband"] = plan
    return plan


def _resource(study: StudyHandle, value: float) -> int | float:
    """The rung's resource as the component's input declares it (int unless it says float)."""
    resource = study.matrix.resource
    declared = study.input_types.get(resource.name)
    kind = declared if declared in ("int", "float") else resource.type
    return int(value) if kind == "int" else float(value)


def _enqueue_rung(
    study: StudyHandle, bracket: int, rung: int, configs: list[tuple[int, dict[str, Any]]]
) -> None:
    """Queue one rung: rung 0 draws the bracket's configs, later rungs get the promoted ones."""
    plan = _drawn_plan(study)
    offset = sum(count for rungs in plan[:bracket] for count, _ in rungs)
    offset += sum(count for count, _ in plan[bracket][:rung])
    resource = _resource(study, plan[bracket][rung][1])
    if rung == 0:
        first = _configs(study, bracket, _schedule(study.matrix)[bracket].n)
        start = sum(rungs[0][0] for rungs in plan[:bracket])
        configs = [(start + i, params) for i, params in enumerate(first)]
    name = study.matrix.resource.name
    for position, (config, params) in enumerate(configs):
        attrs = {"bracket": bracket, "rung": rung, "config": config, "resource": resource}
        study.enqueue(offset + position, {**params, name: resource}, attrs)
    study.set_study_attr("hb_current", [bracket, rung])
