"""The conformance suite of a matrix kind: what ``compile`` promises is what the sweep runs.

Optuna checks every sampler with one ``BasicSamplerTestCase``; this is the same idea for the
entries of ``polyaxon_prefect.search.KINDS``. Give ``MatrixKindTestCase`` a small rendered
matrix of the kind and call ``run_all()`` (or each ``check_*``); a failed check raises
``AssertionError``. The checks need no test framework, so any runner can use them::

    @pytest.mark.parametrize("matrix", SAMPLES, ids=lambda m: m.kind)
    def test_conformance(matrix):
        MatrixKindTestCase(matrix).run_all()

The checks drive an in-memory study trial by trial with ``toy_objective`` as the metric, and
answer a tuned kind's tuner requests with ``tuner``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.specs import Matrix

if TYPE_CHECKING:
    from polyaxon_prefect.search import Suggestion, SweepStudy

__all__ = ["MatrixKindTestCase", "toy_objective"]

_NAMES = itertools.count()


def toy_objective(params: Mapping[str, Any]) -> float:
    """A deterministic metric of a trial's params (numbers add up, anything else by length)."""
    total = 0.0
    for name in sorted(params):
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            total += len(str(value))
        else:
            total += float(value)
    return total


def _toy_tuner(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Two suggestions per round, from the round number (an empty list would end the sweep)."""
    iteration = int(request["iteration"])
    return [{"x": 10 * iteration + k} for k in range(2)]


class MatrixKindTestCase:
    """The checks every matrix kind must pass, on one small rendered matrix of that kind.

    Args:
        matrix: A rendered matrix model with a ``seed`` where its kind takes one (the
            reproducibility check compares two studies of the same seed).
        tuner: Answers a tuner request (``SweepStudy.tuner_request``) with suggestions.
        max_trials: How many trials a check may run before it calls the sweep endless.
    """

    def __init__(
        self,
        matrix: Matrix,
        *,
        tuner: Callable[[Mapping[str, Any]], list[dict[str, Any]]] = _toy_tuner,
        max_trials: int = 500,
    ) -> None:
        self.matrix = matrix
        self.tuner = tuner
        self.max_trials = max_trials

    # -- helpers ---------------------------------------------------------------------------

    def open_study(self) -> SweepStudy:
        """A fresh in-memory study of the matrix."""
        from polyaxon_prefect.search import SweepStudy

        name = f"conformance-{self.matrix.kind}-{next(_NAMES)}"
        return SweepStudy.open(self.matrix, study_name=name, storage=":memory:")

    def drive(self, study: SweepStudy) -> list[Suggestion]:
        """Ask and tell one trial at a time until the study is finished; the suggestions."""
        from polyaxon_prefect.specs import Status

        asked: list[Suggestion] = []
        while len(asked) <= self.max_trials:
            suggestion = study.ask()
            if suggestion is not None:
                asked.append(suggestion)
                value = toy_objective(suggestion.params)
                study.tell(suggestion.number, status=Status.SUCCEEDED, value=value)
                continue
            if study.is_finished():
                return asked
            request = study.tuner_request()
            if request is None:
                raise AssertionError(
                    f"the {self.matrix.kind} study asks nothing, is not finished and waits for "
                    "no tuner, with no trial running"
                )
            study.add_suggestions(self.tuner(request))
        raise AssertionError(f"the {self.matrix.kind} study ran over {self.max_trials} trials")

    # -- checks ----------------------------------------------------------------------------

    def check_registered(self) -> None:
        """The kind has a registry entry, under its own name."""
        from polyaxon_prefect.search import KINDS

        kind = KINDS.get(self.matrix.kind)
        assert kind is not None, f"no registry entry for matrix kind {self.matrix.kind!r}"
        assert kind.name == self.matrix.kind, (kind.name, self.matrix.kind)

    def check_plan_total_is_study_total(self) -> None:
        """``compile``'s plan and the study report the same total, the kind's ``total``."""
        from polyaxon_prefect.search import KINDS, matrix_plan

        plan = matrix_plan(self.matrix)
        study = self.open_study()
        expected = KINDS[self.matrix.kind].total(self.matrix)
        assert plan["total"] == study.total == expected, (plan["total"], study.total, expected)

    def check_seed_reproduces(self) -> None:
        """Two studies of the same seed suggest the same trials, in the same order."""
        first = [(s.index, s.params, s.attrs) for s in self.drive(self.open_study())]
        again = [(s.index, s.params, s.attrs) for s in self.drive(self.open_study())]
        assert first == again, f"the {self.matrix.kind} study does not reproduce from its seed"

    def check_finished_after_total(self) -> None:
        """With a finite total, the study is finished after exactly ``total`` tells (and asks
        nothing more); an open-ended one still finishes."""
        study = self.open_study()
        asked = self.drive(study)
        assert study.is_finished() and study.ask() is None
        if study.total is not None:
            assert len(asked) == study.total, (len(asked), study.total)
            assert [s.index for s in asked] == list(range(study.total))
        assert len(study.history()) == len(asked)

    def run_all(self) -> None:
        """Every check, in order."""
        self.check_registered()
        self.check_plan_total_is_study_total()
        self.check_seed_reproduces()
        self.check_finished_after_total()
