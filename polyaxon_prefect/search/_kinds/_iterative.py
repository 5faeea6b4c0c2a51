"""``iterative``: a user tuner proposes each round of suggestions from the results so far.

The tuner runs when ``tuner_request`` says so (the previous round has finished) and hands its
suggestions to ``add_suggestions``, which queues them like a grid; an empty list, or
``maxIterations`` rounds, ends the sweep. Its position is kept in the study attrs
(``iteration``, ``tuner_pending``, ``tuner_done``), so a resumed sweep picks it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyaxon_prefect.search._kinds._kind_protocol import (
    BaseKind,
    StudyHandle,
    rendered,
    rendered_params,
)
from polyaxon_prefect.specs import Iterative

__all__ = ["IterativeKind"]


def _done(matrix: Iterative, attrs: Mapping[str, Any]) -> bool:
    """Whether the tuner said it has nothing more, or ``maxIterations`` rounds have run."""
    limit = rendered("maxIterations", matrix.max_iterations)
    iteration = int(attrs.get("iteration", 0))
    return bool(attrs.get("tuner_done")) or (limit is not None and iteration >= int(limit))


class IterativeKind(BaseKind[Iterative]):
    name = "iterative"

    def total(self, matrix: Iterative) -> None:
        """Open-ended: the number of runs depends on what the tuner suggests."""
        return None

    def plan(self, matrix: Iterative) -> dict[str, Any]:
        rendered_params(matrix)
        iterations = rendered("maxIterations", matrix.max_iterations)
        tuner = matrix.tuner.hub_ref if matrix.tuner else "a tuner component"
        note = (
            f"up to {iterations} iterations of suggestions from `{tuner}`; "
            "the number of runs depends on what it suggests"
        )
        return {"kind": self.name, "total": None, "note": note}

    def is_finished(self, study: StudyHandle) -> bool:
        attrs = study.study_attrs()
        return _done(study.matrix, attrs) and attrs.get("tuner_pending") is None

    def tuner_request(self, study: StudyHandle) -> dict[str, Any] | None:
        """The tuner's params when it must run now: the previous suggestions have all finished
        and neither ``maxIterations`` nor an empty list has ended the sweep."""
        attrs = study.study_attrs()
        if attrs.get("stop_reason") is not None or _done(study.matrix, attrs):
            return None
        if attrs.get("tuner_pending") is not None:
            return None
        if study.busy():
            return None
        iteration = int(attrs.get("iteration", 0))
        study.set_study_attr("tuner_pending", iteration)
        history = study.history()
        return {
            "matrix": study.matrix.model_dump(mode="json", by_alias=True, exclude_none=True),
            "iteration": iteration,
            "configs": [record.params for record in history],
            "metrics": [{**record.outputs, **record.metrics} for record in history],
        }

    def add_suggestions(self, study: StudyHandle, suggestions: list[dict[str, Any]]) -> None:
        """The tuner's answer: queue the suggestions; an empty list ends the sweep."""
        attrs = study.study_attrs()
        iteration = int(attrs.get("iteration", 0))
        study.set_study_attr("tuner_pending", None)
        if not suggestions:
            study.set_study_attr("tuner_done", True)
            return
        start = max((record.index for record in study.history()), default=-1) + 1
        for position, params in enumerate(suggestions):
            study.enqueue(start + position, dict(params), {"iteration": iteration})
        study.set_study_attr("iteration", iteration + 1)

    def recover(self, study: StudyHandle) -> None:
        """A tuner run a dead parent left pending runs again."""
        study.set_study_attr("tuner_pending", None)
