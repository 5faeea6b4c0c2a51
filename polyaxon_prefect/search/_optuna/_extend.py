"""A finished sweep's study made to run more trials (``resume RUN --more N``).

Growing ``numRuns``/``maxIterations`` by N is all Polyaxon's users ask for; here it is one
change to the study's ``total`` (and for a kind that queued its draws up front, N more draws),
so the trials done stay done, the sampler keeps what it learnt, and the leaderboard grows. A
count the kind does not have (Hyperband's schedule, a tuner's iterations), a search with no
point left, or a sweep ended by early stopping is refused in one sentence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.search._kinds import IndexedKind, TunedKind, get_kind
from polyaxon_prefect.search._optuna._attrs import encode
from polyaxon_prefect.search._trial_records import SweepStudyError
from polyaxon_prefect.specs import MAX_GRID_ENV, Matrix, max_grid

if TYPE_CHECKING:
    from polyaxon_prefect.search._optuna._study import SweepStudy

__all__ = ["extend_study"]


def extend_study(study: SweepStudy, more: int) -> int:
    """Let ``study`` run ``more`` trials beyond its total; returns the new total.

    A grid or a mapping grows to at most its points (a grid cut by ``numRuns``); random draws
    ``more`` distinct points not drawn yet (seeded as the study); a sampled kind (Bayes,
    Hyperopt) asks ``more`` more suggestions.

    Raises:
        SweepStudyError: nothing can be added (see the module docstring).
    """
    if more < 1:
        raise SweepStudyError(f"--more takes a whole number of trials >= 1, not {more}")
    reason = study.stop_reason
    if reason is not None:
        raise SweepStudyError(f"the sweep was ended by early stopping ({reason}): not extended")
    kind = get_kind(study.kind)
    counted = hasattr(study.matrix, "num_runs") or kind.searched
    if isinstance(kind, TunedKind) or study.total is None or not counted:
        raise SweepStudyError(
            f"a {study.kind} sweep has no count of trials to extend (its schedule decides "
            "them): run a new sweep instead"
        )
    old = study.total
    limit = max_grid()
    if old + more > limit:  # a random sweep draws them all now: 10**9 filled the memory
        raise SweepStudyError(
            f"{more:,} more would make the sweep {old + more:,} trials, more than the limit "
            f"of {limit:,} ({MAX_GRID_ENV}): ask for fewer, or raise it"
        )
    if isinstance(kind, IndexedKind):
        new = min(old + more, _points(kind, study.matrix, old))
        if new <= old:
            raise SweepStudyError(
                f"this {study.kind} sweep has run all of its {old} points: nothing to extend"
            )
        wider = _counted(study.matrix, "num_runs", new)
        study.cache.pop("points", None)  # the points are read again from the wider matrix
    elif kind.searched:
        new = old + more
        wider = _counted(study.matrix, "max_iterations", None, more)
    else:
        new = old + _queue_more(study, kind, old, more)
        wider = _counted(study.matrix, "num_runs", None, new - old)
    study.matrix = wider
    study.total = new
    study.set_study_attr("total", new)
    return new


def _counted(matrix: Matrix, field: str, value: int | None, more: int = 0) -> Any:
    """``matrix`` with its count ``field`` set to ``value`` (None: grown by ``more``), so the
    operation a resumed sweep records and the points it reads say the new count; a matrix
    without that count, or with a templated one, is left as it is (the study's total rules)."""
    current = getattr(matrix, field, None)
    if value is None:
        if not isinstance(current, int):
            return matrix
        value = current + more
    return matrix.model_copy(update={field: value})


def _points(kind: IndexedKind[Any], matrix: Matrix, known: int) -> int:
    """How many points the kind has without a ``numRuns`` cut."""
    if not hasattr(matrix, "num_runs"):
        return known
    return len(kind.points(matrix.model_copy(update={"num_runs": None})))


def _point_key(params: Mapping[str, Any]) -> str:
    """A trial's params as one comparable string (numpy numbers as the plain ones)."""
    return json.dumps(encode(dict(params)), sort_keys=True, default=str)


def _queue_more(study: SweepStudy, kind: Any, old: int, more: int) -> int:
    """Queue up to ``more`` draws not drawn yet; how many were queued."""
    current = study.matrix.num_runs
    if not isinstance(current, int):
        raise SweepStudyError(f"a {study.kind} sweep with a templated numRuns cannot be extended")
    wider = study.matrix.model_copy(update={"num_runs": current + more})
    seen = {_point_key(record.params) for record in study.history()}
    fresh = [
        params for params in kind.initial_queue(wider, study.seed) if _point_key(params) not in seen
    ][:more]
    if not fresh:
        raise SweepStudyError(
            f"this {study.kind} sweep has drawn every distinct point of its space: "
            "nothing to extend"
        )
    for offset, params in enumerate(fresh):
        study.enqueue(old + offset, params, {})
    return len(fresh)
