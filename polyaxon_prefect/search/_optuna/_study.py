"""One Optuna study per sweep: what to launch next, what came back, and how to resume.

``SweepStudy`` is the only state of a matrix sweep. Everything lives in an Optuna storage (an
append-only journal file under the artifacts root by default, any Optuna storage URL for many
workers; ``_storage``), so a killed parent can resume and two processes can share the work.

What differs per matrix kind is its registry entry (``_kinds``); the study itself is generic:

- a queued kind (random, hyperband, iterative) puts trials in the study as
  WAITING trials carrying their index and params in user attrs (``initial_queue`` at creation,
  ``advance`` before each ask). Claiming a waiting trial is one atomic state change in the
  storage, so two processes never run the same point;
- an indexed kind (grid, mapping) queues nothing: each ask creates a trial, whose number the
  storage hands out atomically, and runs the point of that index (``IndexedKind.points``), so
  a sweep of 10^6 points opens as fast as one of 10;
- a searched kind (bayes, hyperopt) asks Optuna, whose sampler is the kind's ``sampler``;
- a tuned kind (iterative) also answers ``tuner_request`` and takes ``add_suggestions``.

The Polyaxon status of a trial is kept in its user attrs, its Optuna state says the same
(``_trial_state``: COMPLETE when it succeeded, FAIL when it failed, PRUNED when it was stopped),
and its params are Optuna params for every kind (``_trial_params``), so optuna-dashboard shows
what the sweep shows. What ``--resume`` runs again is ``_resume``'s.
"""

from __future__ import annotations

import contextlib
import math
import re
import secrets
import time
import warnings as _warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.exceptions import (
    DuplicatedStudyError,
    ExperimentalWarning,
    UpdateFinishedTrialError,
)
from optuna.samplers import BaseSampler
from optuna.storages import BaseStorage, JournalStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.search._kinds import IndexedKind, MatrixKind, TunedKind, get_kind
from polyaxon_prefect.search._optuna._attrs import decode, encode
from polyaxon_prefect.search._optuna._journal import LEGACY_FILE, study_name_of, sweep_journals
from polyaxon_prefect.search._optuna._pruning import build_pruner
from polyaxon_prefect.search._optuna._resume import not_run, recover, recreate
from polyaxon_prefect.search._optuna._storage import (
    finish_trial,
    open_storage,
    open_storage_noted,
    set_trial_user_attrs,
)
from polyaxon_prefect.search._optuna._trial_params import OptunaParam, declared_space, optuna_params
from polyaxon_prefect.search._optuna._trial_state import (
    NO_METRIC_NAME,
    finished_state,
    trial_record,
)
from polyaxon_prefect.search._samplers import Dimension, optuna_space
from polyaxon_prefect.search._trial_records import Suggestion, SweepStudyError, TrialRecord
from polyaxon_prefect.specs import Matrix, Status

__all__ = ["Suggestion", "SweepStudy", "SweepStudyError", "TrialRecord"]

optuna.logging.set_verbosity(optuna.logging.WARNING)

_PREFIX = "polyaxon:"


def _metric(matrix: Matrix) -> tuple[str | None, bool]:
    """The metric the sweep optimises and whether larger is better (`Matrix.objective`)."""
    return matrix.objective()


def _seed(matrix: Matrix) -> int:
    """The matrix's seed, or a fresh one (kept in the study, so a resume draws the same)."""
    value = getattr(matrix, "seed", None)
    if isinstance(value, str):
        raise SweepStudyError(
            f"`seed` of the {matrix.kind} matrix is a template ({value!r}): render it first"
        )
    return secrets.randbelow(2**31) if value is None else int(value)


def _sampler(
    kind: MatrixKind[Any], matrix: Matrix, seed: int
) -> tuple[BaseSampler, dict[str, Dimension], list[str]]:
    """The kind's sampler, the search space it samples (empty for a queued kind), and what
    the sampler cannot honour here (torch missing); what the file itself asks for that the
    search approximates is warned about when it is loaded (``specs/matrix/_matrix_warnings``)."""
    space = optuna_space(matrix.hp_params()) if kind.searched else {}
    sampler, warnings = kind.sampler(matrix, space, seed=seed, deterministic=True)
    return sampler, space, warnings


def _number(value: Any) -> float | None:
    """A metric value as a float, or None when it is none (or not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _only_study(path: Path) -> str | None:
    """The name of the (first) study in a journal whose file name does not spell it."""
    backend, _ = open_storage(str(path))
    studies = backend.get_all_studies()
    return studies[0].study_name if studies else None


def _never_written(backend: BaseStorage) -> bool:
    """A journal file with no study at all: the sweep's first write failed (a full disk leaves
    its 0-byte file), so nothing ran and the sweep can start under its name."""
    return isinstance(backend, JournalStorage) and not backend.get_all_studies()


class SweepStudy:
    """The search state of one sweep (see the module docstring).

    It is also the ``StudyHandle`` the matrix kinds drive: ``study_attrs``, ``set_study_attr``,
    ``enqueue``, ``history``, ``busy`` and ``originals``.
    """

    def __init__(
        self,
        matrix: Any,
        study: optuna.Study,
        storage: BaseStorage,
        url: str,
        input_types: Mapping[str, str] | None,
        warnings: Iterable[str],
        space: Mapping[str, Dimension],
    ) -> None:
        self.matrix = matrix
        self.kind: str = matrix.kind
        self._kind = get_kind(self.kind)
        self.name = study.study_name
        self.storage_url = url
        self._study = study
        self._storage = storage
        self._study_id = storage.get_study_id_from_name(study.study_name)
        self.input_types: dict[str, str] = dict(input_types or {})
        self.metric_name, self.maximize = _metric(matrix)
        attrs = self.study_attrs()
        self.seed: int = attrs.get("seed", 0)
        self.total: int | None = attrs.get("total")
        self.warnings: tuple[str, ...] = tuple(warnings)
        self.cache: dict[str, Any] = {}
        self._space = dict(space)

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        matrix: Any,
        *,
        study_name: str,
        storage: str | None = None,
        resume: bool = False,
        input_types: Mapping[str, str] | None = None,
        artifacts_root: Path | None = None,
    ) -> SweepStudy:
        """Create the sweep's study (``resume=False``) or load it (``resume=True``).

        Args:
            matrix: The rendered matrix model.
            study_name: The study's name in the storage.
            storage: A storage URL or file (see ``open_storage``); None: the sweep's own
                journal file under ``artifacts_root`` (``_journal``).
            resume: Load an existing study instead of creating one.
            input_types: The component's input types by name (a Hyperband resource follows its
                input's type).
            artifacts_root: Where the default storage lives; the caller resolves it.

        Raises:
            SweepStudyError: the study exists (create), is missing or of another kind (resume).
        """
        kind = get_kind(matrix.kind)
        backend, url, notes = open_storage_noted(
            storage, artifacts_root=artifacts_root, study_name=study_name, resume=resume
        )
        _name, maximize = _metric(matrix)
        pruner = build_pruner(getattr(matrix, "early_stopping", None))
        if resume and _never_written(backend):
            notes.append(
                f"{url}: the sweep's study was never written (its first write failed); "
                "starting it anew"
            )
            resume = False
        seed = cls._resumed_seed(backend, url, study_name, matrix) if resume else _seed(matrix)
        sampler, space, warnings = _sampler(kind, matrix, seed)
        warnings = [*notes, *warnings]
        if resume:
            study = optuna.load_study(
                study_name=study_name, storage=backend, sampler=sampler, pruner=pruner
            )
            self = cls(matrix, study, backend, url, input_types, warnings, space)
            self.seed = seed
            return self
        direction = StudyDirection.MAXIMIZE if maximize else StudyDirection.MINIMIZE
        try:
            study = optuna.create_study(
                study_name=study_name,
                storage=backend,
                sampler=sampler,
                pruner=pruner,
                direction=direction,
            )
        except DuplicatedStudyError:
            raise SweepStudyError(
                f"a sweep study named {study_name!r} already exists in {url}: resume it, "
                "or choose another name"
            ) from None
        self = cls(matrix, study, backend, url, input_types, warnings, space)
        self._create(seed)
        return self

    @staticmethod
    def _resumed_seed(backend: BaseStorage, url: str, study_name: str, matrix: Matrix) -> int:
        """The seed an existing study was created with, after checking it is the same kind."""
        try:
            study_id = backend.get_study_id_from_name(study_name)
        except KeyError:
            raise SweepStudyError(
                f"there is no sweep study named {study_name!r} in {url} to resume"
            ) from None
        attrs = {
            k[len(_PREFIX) :]: v
            for k, v in backend.get_study_user_attrs(study_id).items()
            if k.startswith(_PREFIX)
        }
        if attrs.get("kind") not in (None, matrix.kind):
            raise SweepStudyError(
                f"the sweep study {study_name!r} is a {attrs['kind']} search, "
                f"not {matrix.kind}: resume it with the same matrix"
            )
        if "seed" not in attrs:  # its creation was cut short before the seed: nothing drawn
            return _seed(matrix)
        return int(attrs["seed"])

    def _create(self, seed: int) -> None:
        """Record the plan and enqueue what is known up front; ``ready`` is set last, so a
        second process that opens the study meanwhile waits instead of finding nothing."""
        self._name_metric()
        self.set_study_attr("kind", self.kind)
        self.set_study_attr("seed", seed)
        self.set_study_attr("created", time.time())
        self.seed = seed
        queued = self._kind.initial_queue(self.matrix, seed)
        self.total = self._kind.total(self.matrix)
        self.set_study_attr("total", self.total)
        for index, params in enumerate(queued):
            self.enqueue(index, params, {})
        self._kind.advance(self)
        self.set_study_attr("ready", True)

    def finish_creation(self) -> str | None:
        """Create the study over again when its creation was cut short (`_resume.recreate`)."""
        return recreate(self)

    def _name_metric(self) -> None:
        """Name the objective after the metric (``loss``), so optuna-dashboard and
        ``trials_dataframe`` label it so instead of "Objective 0" (`NO_METRIC_NAME` without)."""
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore", ExperimentalWarning)  # stable since 3.2, still marked
            self._study.set_metric_names([self.metric_name or NO_METRIC_NAME])

    @staticmethod
    def latest(
        storage: str | None, prefix: str, *, artifacts_root: Path | None = None
    ) -> str | None:
        """The newest study whose name starts with ``prefix`` (for ``run --resume``).

        With the default storage this reads file names only (the newest journal of the
        prefix), then, when there is none, the shared journal of earlier versions.
        """
        if storage is None and artifacts_root is not None:
            journals = sweep_journals(artifacts_root, re.escape(prefix))
            if journals:
                return study_name_of(journals[0]) or _only_study(journals[0])
            legacy = Path(artifacts_root) / LEGACY_FILE
            if not legacy.is_file():
                return None
            storage = str(legacy)
        backend, _ = open_storage(storage, artifacts_root=artifacts_root)
        found: list[tuple[float, str]] = []
        for study in backend.get_all_studies():
            if study.study_name.startswith(prefix):
                created = study.user_attrs.get(_PREFIX + "created", 0.0)
                found.append((float(created), study.study_name))
        return max(found)[1] if found else None

    # -- the handle the kinds drive --------------------------------------------------------

    def study_attrs(self) -> dict[str, Any]:
        """The sweep's own study attrs, without their prefix."""
        raw = self._storage.get_study_user_attrs(self._study_id)
        return {k[len(_PREFIX) :]: v for k, v in raw.items() if k.startswith(_PREFIX)}

    def set_study_attr(self, key: str, value: object) -> None:
        self._storage.set_study_user_attr(self._study_id, _PREFIX + key, value)

    def _trials(self, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]:
        trials = self._storage.get_all_trials(self._study_id, deepcopy=False, states=states)
        return [t for t in trials if not t.user_attrs.get("void")]

    def _trial_id(self, number: int) -> int:
        return self._storage.get_trial_id_from_study_id_trial_number(self._study_id, number)

    def enqueue(
        self,
        index: int,
        params: Mapping[str, Any],
        attrs: Mapping[str, Any],
        *,
        fixed: Mapping[str, Any] | None = None,
        retry_of: int | None = None,
    ) -> None:
        """Queue a trial for ``index`` (``fixed``: the Optuna params a retry must reuse)."""
        user_attrs: dict[str, Any] = {
            "index": index,
            "params": encode(dict(params)),
            "attrs": encode(dict(attrs)),
        }
        if retry_of is not None:
            user_attrs["retry_of"] = retry_of
        self._study.enqueue_trial(dict(fixed or {}), user_attrs=user_attrs)

    def busy(self) -> bool:
        return bool(self._trials((TrialState.WAITING, TrialState.RUNNING)))

    def originals(self) -> int:
        return sum(1 for t in self._trials() if "retry_of" not in t.user_attrs)

    # -- asking ------------------------------------------------------------------------------

    def ask(self) -> Suggestion | None:
        """The next trial to launch, or None (nothing now: wait for running trials, or done)."""
        attrs = self.study_attrs()
        if not attrs.get("ready") or attrs.get("stop_reason") is not None:
            return None
        self._kind.advance(self)
        if self._kind.searched or isinstance(self._kind, IndexedKind):
            return self._sample()
        return self._pop()

    def _pop(self) -> Suggestion | None:
        """Claim the first waiting trial (one atomic state change; a lost race moves on).

        The same steps as Optuna's private ``Study._pop_waiting_trial_id``.
        """
        for trial in self._trials((TrialState.WAITING,)):
            trial_id = self._trial_id(trial.number)
            try:
                if not self._storage.set_trial_state_values(trial_id, state=TrialState.RUNNING):
                    continue
            except UpdateFinishedTrialError:
                continue
            user = trial.user_attrs
            return Suggestion(
                number=trial.number,
                index=int(user["index"]),
                params=decode(user.get("params", {})),
                attrs=decode(user.get("attrs", {})),
            )
        return None

    def _points(self) -> Any:
        """The indexed kind's points (a lazy sequence), once per opened study."""
        if "points" not in self.cache:
            assert isinstance(self._kind, IndexedKind)
            self.cache["points"] = self._kind.points(self.matrix)
        return self.cache["points"]

    def _sample(self) -> Suggestion | None:
        """Ask Optuna for a trial (a queued retry first), up to ``total`` original trials;
        its params come from the sampler, or for an indexed kind from the point of its index."""
        waiting = self._trials((TrialState.WAITING,))
        if not waiting and self.total is not None and self.originals() >= self.total:
            return None
        trial = self._study.ask()
        user = trial.user_attrs
        if "index" in user:
            index = int(user["index"])
        else:
            frozen = self._trials()
            retries = sum(
                1 for t in frozen if t.number < trial.number and "retry_of" in t.user_attrs
            )
            index = trial.number - retries
            if self.total is not None and index >= self.total:
                # another process took the last slot between our check and our ask
                trial_id = self._trial_id(trial.number)
                self._storage.set_trial_user_attr(trial_id, "void", True)
                self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)
                return None
        if isinstance(self._kind, IndexedKind):
            params = self._points()[index]
            self._suggested(trial.number, index, params)
            return Suggestion(number=trial.number, index=index, params=params, attrs={})
        raw: dict[str, Any] = {}
        for name, dim in self._space.items():
            dist = dim.distribution
            if isinstance(dist, CategoricalDistribution):
                raw[name] = trial.suggest_categorical(name, dist.choices)
            elif isinstance(dist, FloatDistribution):
                raw[name] = trial.suggest_float(name, dist.low, dist.high, log=dist.log)
        params = {name: self._space[name].decode(value) for name, value in raw.items()}
        self._suggested(trial.number, index, params)
        return Suggestion(number=trial.number, index=index, params=params, attrs={})

    def _suggested(self, number: int, index: int, params: Mapping[str, Any]) -> None:
        """Record what trial ``number`` runs (its index and params): one journal append."""
        attrs = {"index": index, "params": encode(dict(params)), "attrs": {}}
        set_trial_user_attrs(self._storage, self._trial_id(number), attrs)

    # -- results -----------------------------------------------------------------------------

    def report(self, number: int, step: int, value: float) -> bool:
        """Record an intermediate metric value; True when the trial should be stopped."""
        trial_id = self._trial_id(number)
        try:
            self._storage.set_trial_intermediate_value(trial_id, int(step), float(value))
        except UpdateFinishedTrialError:
            return False
        return bool(self._study.pruner.prune(self._study, self._storage.get_trial(trial_id)))

    def tell(
        self,
        number: int,
        *,
        status: Status,
        value: float | None = None,
        outputs: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        uuid: str | None = None,
        message: str = "",
        gpu_hours: float | None = None,
        unfinished: bool = False,
    ) -> None:
        """Record how a trial ended (a Polyaxon status; ``unfinished``: stopped by a stop of
        the sweep, run again on resume), its GPU-hours, its params and its metric value, when
        any: ``value``, else the matrix metric in ``outputs``, then in ``metrics``
        (`_trial_state` has the Optuna state each is told as)."""
        outputs, metrics = dict(outputs or {}), dict(metrics or {})
        if value is None and self.metric_name is not None:
            value = outputs.get(self.metric_name, metrics.get(self.metric_name))
        number_value = _number(value)
        trial_id = self._trial_id(number)
        attrs = {"status": status, "outputs": encode(outputs), "metrics": encode(metrics)}
        attrs.update(uuid=uuid, message=message, value=encode(number_value), gpu_hours=gpu_hours)
        if unfinished:
            attrs["unfinished"] = True
        finite = number_value if number_value is not None and math.isfinite(number_value) else None
        state, values = finished_state(status, finite, self.metric_name is not None)
        params = self._optuna_params(trial_id)
        # the attributes, params and state in one journal append, one sync (a few ms per trial
        # in the sweep's loop thread)
        with contextlib.suppress(UpdateFinishedTrialError):
            finish_trial(self._storage, trial_id, attrs, state=state, values=values, params=params)

    def _optuna_params(self, trial_id: int) -> dict[str, OptunaParam]:
        """The trial's params for Optuna (`_trial_params`); a searched kind's are set already."""
        if self._kind.searched:
            return {}
        if "optuna_space" not in self.cache:
            self.cache["optuna_space"] = declared_space(self.matrix.hp_params())
        user = self._storage.get_trial(trial_id).user_attrs
        return optuna_params(self.cache["optuna_space"], decode(user.get("params", {})))

    def stop(self, reason: str) -> None:
        """Early stopping: ask nothing more and drop the queued trials."""
        self.set_study_attr("stop_reason", reason)
        for trial in self._trials((TrialState.WAITING,)):
            trial_id = self._trial_id(trial.number)
            self._storage.set_trial_user_attr(trial_id, "dropped", True)
            with contextlib.suppress(UpdateFinishedTrialError):
                self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

    @property
    def stop_reason(self) -> str | None:
        return self.study_attrs().get("stop_reason")

    def recover(self) -> list[int]:
        """Queue again what a dead parent or a stop left unfinished (`_resume.recover`)."""
        return recover(self)

    def not_run(self) -> int:
        """How many points have not run to their end (`_resume.not_run`)."""
        return not_run(self)

    # -- views -------------------------------------------------------------------------------

    def _latest(self) -> dict[int, FrozenTrial]:
        latest: dict[int, FrozenTrial] = {}
        for trial in self._trials():
            user = trial.user_attrs
            if "index" not in user or user.get("dropped"):
                continue
            index = int(user["index"])
            if index not in latest or trial.number > latest[index].number:
                latest[index] = trial
        return latest

    def history(self) -> list[TrialRecord]:
        """Every trial launched or queued (latest attempt per index), ordered by index."""
        scored = self.metric_name is not None
        return [trial_record(t, scored) for _, t in sorted(self._latest().items())]

    def best(self) -> TrialRecord | None:
        """The succeeded trial with the best metric value (None without a metric)."""
        scored = [r for r in self.history() if r.status == Status.SUCCEEDED and r.value is not None]
        if not scored:
            return None
        sign = -1.0 if self.maximize else 1.0
        return min(scored, key=lambda r: (sign * float(r.value or 0.0), r.index))

    def is_finished(self) -> bool:
        """Nothing more will ever be asked and nothing is running."""
        attrs = self.study_attrs()
        if not attrs.get("ready"):
            return False
        running = self._trials((TrialState.RUNNING,))
        if attrs.get("stop_reason") is not None:
            return not running
        self._kind.advance(self)
        if running or self._trials((TrialState.WAITING,)):
            return False
        return self._kind.is_finished(self)

    # -- tuned kinds (iterative) -------------------------------------------------------------

    def tuner_request(self) -> dict[str, Any] | None:
        """The tuner's params when it must run now (None for a kind without a tuner)."""
        if not isinstance(self._kind, TunedKind):
            return None
        return self._kind.tuner_request(self)

    def add_suggestions(self, suggestions: list[dict[str, Any]]) -> None:
        """The tuner's answer: enqueue the suggestions; an empty list ends the sweep.

        Raises:
            SweepStudyError: the matrix kind takes no tuner suggestions.
        """
        if not isinstance(self._kind, TunedKind):
            raise SweepStudyError(f"a {self.kind} sweep takes no tuner suggestions")
        self._kind.add_suggestions(self, suggestions)
