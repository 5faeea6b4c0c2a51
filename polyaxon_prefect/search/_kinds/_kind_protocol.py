"""The ``MatrixKind`` protocol: what a sweep needs to know about one matrix kind.

A kind answers four questions without running anything (``total``, ``plan``, ``initial_queue``,
``sampler``) and two while the sweep runs (``advance``, ``is_finished``), so ``SweepStudy`` and
``matrix_plan`` hold no per-kind branches: adding a matrix kind is one spec model plus one module
here, registered in ``KINDS`` (and the conformance suite in ``polyaxon_prefect.testing`` picks it
up). Kind modules never import Optuna at module level: ``compile`` plans through them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from polyaxon_prefect.search._sweep import jsonable
from polyaxon_prefect.search._trial_records import SweepStudyError, TrialRecord

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

    from polyaxon_prefect.search._samplers import Dimension
    from polyaxon_prefect.specs import HpParam, Matrix

__all__ = [
    "PLAN_LISTED",
    "PLAN_SHOWN",
    "BaseKind",
    "IndexedKind",
    "MatrixKind",
    "SearchedKind",
    "StudyHandle",
    "TemplateError",
    "TunedKind",
    "indexed_plan",
    "rendered",
    "rendered_params",
]

PLAN_LISTED = 1000
"""``compile`` lists every point of a grid or mapping up to this many; a larger one is shown
as its count and its first `PLAN_SHOWN` points (a 10^6-point plan would be a 100 MB file)."""
PLAN_SHOWN = 10

M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)


class TemplateError(SweepStudyError, ValueError):
    """A count or param of the matrix is still a template: known only at run time.

    A ``ValueError`` so that ``matrix_plan`` turns it into a note, and a ``SweepStudyError`` so
    that a sweep given an unrendered matrix fails as any other unusable study does.
    """

    def __init__(self, subject: str, value: object) -> None:
        super().__init__(f"{subject} is a template ({value!r}): known at run time")
        self.subject = subject
        self.value = value


def rendered(label: str, value: object) -> Any:
    """``value``, unless it is still a template (a string where a number belongs)."""
    if isinstance(value, str):
        raise TemplateError(f"`{label}`", value)
    return value


def rendered_params(matrix: Matrix) -> dict[str, HpParam]:
    """The matrix's hyper-parameters, refusing any whose value is still a template."""
    params = matrix.hp_params()
    for name, hp in params.items():
        if hp.is_ref:
            raise TemplateError(f"param `{name}`", hp.value)
    return params


class StudyHandle(Protocol):
    """What a kind may read and change in a running study (``SweepStudy`` implements it)."""

    @property
    def matrix(self) -> Any:
        """The rendered matrix model."""
        ...

    @property
    def seed(self) -> int: ...

    @property
    def total(self) -> int | None: ...

    @property
    def maximize(self) -> bool: ...

    @property
    def input_types(self) -> Mapping[str, str]:
        """The component's input types by name."""
        ...

    @property
    def cache(self) -> dict[str, Any]:
        """Values a kind derives from the matrix and seed, once per opened study."""
        ...

    def study_attrs(self) -> dict[str, Any]:
        """The sweep's own study attrs (shared by every process of the sweep)."""
        ...

    def set_study_attr(self, key: str, value: object) -> None: ...

    def enqueue(self, index: int, params: Mapping[str, Any], attrs: Mapping[str, Any]) -> None:
        """Queue a trial; the first process to ask claims it."""
        ...

    def history(self) -> list[TrialRecord]:
        """The latest attempt of every index, ordered by index."""
        ...

    def busy(self) -> bool:
        """Whether any trial is waiting or running."""
        ...

    def originals(self) -> int:
        """How many trials were asked, retries not counted."""
        ...


class MatrixKind(Protocol[M_contra]):
    """One matrix kind, as the sweep and ``compile`` see it."""

    name: str
    """The matrix ``kind`` string this entry is registered under."""
    searched: bool
    """True: trials come from the sampler (Optuna ask); False: from the queue the kind fills."""

    def total(self, matrix: M_contra) -> int | None:
        """How many trials the sweep runs (None: open-ended). The one source of this number:
        ``compile``'s plan and ``SweepStudy.total`` both read it."""
        ...

    def plan(self, matrix: M_contra) -> dict[str, Any]:
        """The JSON-able plan ``compile`` prints (``kind``, ``total`` and the kind's details)."""
        ...

    def initial_queue(self, matrix: M_contra, seed: int) -> list[dict[str, Any]]:
        """The params of the trials queued when the study is created, in index order."""
        ...

    def sampler(
        self, matrix: M_contra, space: Mapping[str, Dimension], *, seed: int, deterministic: bool
    ) -> tuple[BaseSampler, list[str]]:
        """The Optuna sampler of the study, and what it cannot honour of the matrix."""
        ...

    def advance(self, study: StudyHandle) -> None:
        """Queue what comes next now that earlier trials finished (before every ask)."""
        ...

    def is_finished(self, study: StudyHandle) -> bool:
        """Whether nothing more will be asked, given that nothing is waiting or running."""
        ...


@runtime_checkable
class TunedKind(Protocol):
    """A kind whose suggestions come from a user tuner run by the sweep between rounds."""

    def tuner_request(self, study: StudyHandle) -> dict[str, Any] | None:
        """The tuner's params when it must run now, else None."""
        ...

    def add_suggestions(self, study: StudyHandle, suggestions: list[dict[str, Any]]) -> None:
        """The tuner's answer (an empty list ends the sweep)."""
        ...

    def recover(self, study: StudyHandle) -> None:
        """Forget a tuner run that a dead parent left pending."""
        ...


class BaseKind(Generic[M]):
    """Defaults for a kind whose trials are all queued by the kind itself."""

    name: str
    searched: bool = False

    def total(self, matrix: M) -> int | None:
        raise NotImplementedError

    def plan(self, matrix: M) -> dict[str, Any]:
        raise NotImplementedError

    def initial_queue(self, matrix: M, seed: int) -> list[dict[str, Any]]:
        return []

    def sampler(
        self, matrix: M, space: Mapping[str, Dimension], *, seed: int, deterministic: bool
    ) -> tuple[BaseSampler, list[str]]:
        """A seeded ``RandomSampler``: queued trials fix every param, so it never draws."""
        from optuna.samplers import RandomSampler

        return RandomSampler(seed=seed), []

    def advance(self, study: StudyHandle) -> None:
        return None

    def is_finished(self, study: StudyHandle) -> bool:
        return True


def indexed_plan(kind: str, points: Sequence[dict[str, Any]], what: str) -> dict[str, Any]:
    """The plan of a kind whose trials are known points: all of them (``suggestions``) up to
    `PLAN_LISTED`, else the first `PLAN_SHOWN` (``first``) and a note with the count."""
    total = len(points)
    if total <= PLAN_LISTED:
        return {"kind": kind, "total": total, "suggestions": jsonable(list(points))}
    first = [points[i] for i in range(PLAN_SHOWN)]
    note = f"{total} {what}; the first {PLAN_SHOWN} are shown"
    return {"kind": kind, "total": total, "first": jsonable(first), "note": note}


class IndexedKind(BaseKind[M]):
    """Defaults for a kind whose trials are known points, taken by index as the sweep asks.

    Nothing is queued up front: trial ``n`` of the study (retries aside) runs ``points[n]``,
    so opening a sweep of 10^6 points costs what opening one of 10 does.
    """

    points_are: str
    """What the plan's note calls the points (a grid's ``points``, a mapping's ``entries``)."""

    def points(self, matrix: M) -> Sequence[dict[str, Any]]:
        """The trials' params in index order: a lazy sequence (``len`` and ``[i]``)."""
        raise NotImplementedError

    def total(self, matrix: M) -> int:
        """How many points (counted by the lazy sequence, nothing enumerated)."""
        return len(self.points(matrix))

    def plan(self, matrix: M) -> dict[str, Any]:
        return indexed_plan(self.name, self.points(matrix), self.points_are)

    def is_finished(self, study: StudyHandle) -> bool:
        return study.total is not None and study.originals() >= study.total


class SearchedKind(BaseKind[M]):
    """Defaults for a kind whose trials the sampler suggests, ``total`` of them."""

    searched = True

    def is_finished(self, study: StudyHandle) -> bool:
        return study.total is not None and study.originals() >= study.total
