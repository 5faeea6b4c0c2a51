"""What ``--resume`` runs again, and how many points a sweep left unrun.

A sweep resumes whole: every point a stop or a crash left unfinished is queued again with its
index and params (for a searched kind, its Optuna params too, as Optuna's
``RetryHeartbeatStaleTrialCallback`` re-adds a stale trial with its params), and the sweep
runs it like any other point:

- a trial the study still holds ``RUNNING`` (the parent was killed, ``kill -9``): told
  ``FAIL`` (it did not finish) and queued again, never counted as done;
- a trial ``stopped`` by a stop of the sweep (Ctrl-C, ``stop``), not pruned by a policy: it
  stays ``PRUNED`` in the study and is queued again.

A study whose creation was cut short (a full disk before ``ready``) ran nothing: it is created
again whole (``recreate``).

A study stopped by early stopping (its ``stop_reason``) is over: nothing is queued again.

The companion of `SweepStudy` (kept apart so the class stays one job: asking and telling); it
reads the study's storage directly, through the `ResumedStudy` it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.search._kinds import IndexedKind, MatrixKind, StudyHandle, TunedKind
from polyaxon_prefect.search._optuna._attrs import decode
from polyaxon_prefect.search._optuna._storage import finish_trial
from polyaxon_prefect.search._optuna._trial_params import OptunaParam
from polyaxon_prefect.search._trial_records import PENDING, TrialRecord
from polyaxon_prefect.specs import Status

__all__ = ["ResumedStudy", "not_run", "recover", "recreate"]


class ResumedStudy(StudyHandle, Protocol):
    """What resuming reads and changes in a study (``SweepStudy`` implements it): named here,
    so this module needs no import of the study that calls it."""

    @property
    def seed(self) -> int: ...

    @property
    def total(self) -> int | None: ...

    @property
    def stop_reason(self) -> str | None: ...

    @property
    def _kind(self) -> MatrixKind[Any]: ...

    @property
    def _storage(self) -> BaseStorage: ...

    def enqueue(
        self,
        index: int,
        params: Mapping[str, Any],
        attrs: Mapping[str, Any],
        *,
        fixed: Mapping[str, Any] | None = None,
        retry_of: int | None = None,
    ) -> None: ...

    def _trials(self, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]: ...

    def _trial_id(self, number: int) -> int: ...

    def _optuna_params(self, trial_id: int) -> dict[str, OptunaParam]: ...

    def _create(self, seed: int) -> None: ...


_CRASHED = "still running when the sweep's parent stopped; retried"


def recover(study: ResumedStudy) -> list[int]:
    """Fail the trials a dead parent left running, and queue them and the trials a stop of
    the sweep left unfinished again (same index and params); the indexes queued again.
    Only call it while no other process runs this study."""
    indexes = _fail_running(study)
    if study.stop_reason is None:
        retried = set(indexes)
        for record in study.history():
            if record.unfinished and record.status == Status.STOPPED:
                _retry(study, record)
                retried.add(record.index)
        indexes = sorted(retried)
    if isinstance(study._kind, TunedKind):
        study._kind.recover(study)
    return indexes


def recreate(study: ResumedStudy) -> str | None:
    """Create ``study`` over again when its creation was cut short (a full disk or a kill
    before ``ready``, which no ask goes past); a sentence saying so, or None.

    Such a study never ran a trial (an ask waits for ``ready``): its queued trials are voided
    and the plan queued whole again. Only call it while no other process runs this study."""
    if study.study_attrs().get("ready"):
        return None
    voided = 0
    for trial in study._trials():
        try:
            trial_id = study._trial_id(trial.number)
            finish_trial(study._storage, trial_id, {"void": True}, state=TrialState.FAIL)
        except UpdateFinishedTrialError:
            continue
        voided += 1
    study._create(study.seed)
    return (
        "the sweep's study was not fully created (its storage could not be written): "
        f"created again ({voided} queued trial(s) of the cut creation dropped)"
    )


def _fail_running(study: ResumedStudy) -> list[int]:
    """Tell ``FAIL`` to every trial still ``RUNNING``; the indexes of those to queue again."""
    indexes = []
    stopped = study.stop_reason is not None
    for trial in study._trials((TrialState.RUNNING,)):
        attrs = {"status": str(Status.FAILED), "message": _CRASHED}
        trial_id = study._trial_id(trial.number)
        try:
            params = study._optuna_params(trial_id)  # the dashboard shows what it was running
            finish_trial(study._storage, trial_id, attrs, state=TrialState.FAIL, params=params)
        except UpdateFinishedTrialError:
            continue
        user = trial.user_attrs
        if "index" not in user:
            continue
        if not stopped:
            fixed = dict(trial.params) if study._kind.searched else None
            study.enqueue(
                int(user["index"]),
                decode(user.get("params", {})),
                decode(user.get("attrs", {})),
                fixed=fixed,
                retry_of=trial.number,
            )
        indexes.append(int(user["index"]))
    return indexes


def _retry(study: ResumedStudy, record: TrialRecord) -> None:
    """Queue ``record``'s point again: a stop of the sweep left it unfinished."""
    fixed = None
    if study._kind.searched:  # the sampler's own params, as the first attempt drew them
        fixed = dict(study._storage.get_trial(study._trial_id(record.number)).params)
    study.enqueue(record.index, record.params, record.attrs, fixed=fixed, retry_of=record.number)


def not_run(study: ResumedStudy) -> int:
    """How many of the sweep's points have not run to their end: unfinished, queued or
    running trials, and (for a kind with a known total of asked trials) those never asked."""
    history = study.history()
    unrun = sum(
        1
        for r in history
        if r.status in (PENDING, Status.RUNNING) or (r.unfinished and r.status == Status.STOPPED)
    )
    total = study.total
    # an indexed or searched kind asks until `total` original trials exist (`is_finished`);
    # a queued kind's points are in the history already (pending)
    if total is not None and (study._kind.searched or isinstance(study._kind, IndexedKind)):
        unrun += max(0, total - study.originals())
    return unrun
