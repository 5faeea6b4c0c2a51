"""One Optuna study per sweep: what to launch next, what came back, and how to resume.

``SweepStudy`` is the only state of a matrix sweep. Everything lives in an Optuna storage (an
SQLite file by default, any Optuna storage URL for many workers), so a killed parent can resume
and two processes can share the work.

How each kind asks:

- ``grid``, ``mapping``, ``random``: every suggestion is computed when the study is created and
  ENQUEUED as a waiting trial carrying its index and params in user attrs. Claiming a waiting
  trial is one atomic state change in the storage, so two processes never run the same point.
- ``hyperband``: synchronous brackets run one after the other, rung by rung. A rung's configs
  are enqueued when the previous rung has finished (``ask`` returns None while one is in flight);
  the best ``floor(n / eta)`` by the metric are promoted with the resource multiplied by ``eta``.
- ``bayes`` and ``hyperopt``: Optuna's ask/tell with the sampler of ``_samplers``.
- ``iterative``: a user tuner runs when ``tuner_request`` says so and hands its suggestions to
  ``add_suggestions`` (an empty list ends the sweep), which enqueues them like a grid.

The Polyaxon status of a trial is kept in its user attrs; the Optuna state is COMPLETE only when
the trial has a metric value (Optuna requires one), FAIL otherwise, PRUNED when it was stopped.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import DuplicatedStudyError, UpdateFinishedTrialError
from optuna.samplers import RandomSampler
from optuna.storages import BaseStorage, InMemoryStorage, RDBStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.search._plan import grid_suggestions, hyperband_schedule, mapping_suggestions
from polyaxon_prefect.search._pruning import build_pruner
from polyaxon_prefect.search._random import random_suggestions
from polyaxon_prefect.search._samplers import Dimension, build_sampler, optuna_space

__all__ = ["Suggestion", "SweepStudy", "SweepStudyError", "TrialRecord"]

optuna.logging.set_verbosity(optuna.logging.WARNING)

_QUEUED_KINDS = frozenset({"grid", "mapping", "random", "hyperband", "iterative"})
_SAMPLED_KINDS = frozenset({"bayes", "hyperopt"})
_PREFIX = "polyaxon:"
_MEMORY_URL = ":memory:"
_MEMORY: dict[str, InMemoryStorage] = {}


class SweepStudyError(PolyaxonPrefectError):
    """The sweep's study cannot be created or opened as asked (exists, missing, other kind)."""


@dataclass(frozen=True)
class Suggestion:
    """One trial to launch now."""

    number: int
    index: int
    params: dict[str, Any]
    attrs: dict[str, Any]


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the sweep sees it (the latest attempt of its index)."""

    number: int
    index: int
    params: dict[str, Any]
    status: str
    value: float | None
    outputs: dict[str, Any]
    metrics: dict[str, Any]
    uuid: str | None
    attrs: dict[str, Any]
    message: str = ""


# ---------------------------------------------------------------------------------------------
# JSON-safe values in user attrs (dates and numpy scalars survive the round trip)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"__datetime__": value.isoformat()}
    if isinstance(value, date):
        return {"__date__": value.isoformat()}
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return _encode(item())
    return repr(value)


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, raw),) = value.items()
            if key == "__datetime__":
                return datetime.fromisoformat(raw)
            if key == "__date__":
                return date.fromisoformat(raw)
            if key == "__float__":
                return float(raw)
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# Storage


def _sqlite_storage(url: str) -> RDBStorage:
    """An SQLite storage whose transactions take the write lock up front (BEGIN IMMEDIATE).

    pysqlite only opens a transaction at the first write, so Optuna's read-then-update claim
    of a waiting trial could be won by two processes at once; with BEGIN IMMEDIATE the whole
    claim is serialised and the loser sees the trial already running.
    """
    from sqlalchemy import event

    storage = RDBStorage(
        url, engine_kwargs={"connect_args": {"timeout": 120, "isolation_level": None}}
    )

    @event.listens_for(storage.engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return storage


def _journal_storage(path: Path) -> BaseStorage:
    """An append-only journal file: Optuna's storage for one machine without a server.

    Every change is one appended line under a file lock, so an ask plus a tell costs about
    2 ms where the same work in an SQLite file costs about 40 ms (each transaction syncs the
    file); several processes can share it (the lock serialises their appends, and a waiting
    trial claimed by one is seen as running by the others).
    """
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = JournalFileOpenLock(str(path))
    return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _open_storage(storage: str | None) -> tuple[BaseStorage, str]:
    """The storage for ``storage``: ``None`` (the default journal file under the artifacts
    root), a file path (a journal file, or an SQLite database for ``.db``/``.sqlite``
    names), or any Optuna storage URL (``sqlite:///...``, ``postgresql+psycopg2://...``)."""
    if storage in (_MEMORY_URL, "memory"):
        return _MEMORY.setdefault(_MEMORY_URL, InMemoryStorage()), _MEMORY_URL
    if storage is None:
        from polyaxon_prefect.runtime._context import resolve_artifacts_root

        storage = str(resolve_artifacts_root() / "sweeps.journal")
    if "://" not in storage:
        path = Path(storage).expanduser().absolute()
        if path.suffix.lower() not in _SQLITE_SUFFIXES:
            return _journal_storage(path), str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        storage = f"sqlite:///{path}"
    if storage.startswith("sqlite:"):
        return _sqlite_storage(storage), storage
    return RDBStorage(storage), storage


def _metric(matrix: Any) -> tuple[str | None, bool]:
    """The metric the sweep optimises and whether larger is better.

    ``bayes``/``hyperopt``/``hyperband`` name it; other kinds borrow the first metric early
    stopping's, so ``best()`` still means something.
    """
    metric = getattr(matrix, "metric", None)
    if metric is not None:
        return metric.name, str(metric.optimization) == "maximize"
    for stopping in getattr(matrix, "early_stopping", None) or ():
        if getattr(stopping, "kind", "") == "metric_early_stopping":
            return stopping.metric, str(stopping.optimization) == "maximize"
    return None, False


def _rendered_int(matrix: Any, label: str, value: Any) -> int | None:
    if isinstance(value, str):
        raise SweepStudyError(
            f"`{label}` of the {matrix.kind} matrix is a template ({value!r}): render it first"
        )
    return None if value is None else int(value)


# ---------------------------------------------------------------------------------------------


class SweepStudy:
    """The search state of one sweep (see the module docstring)."""

    def __init__(
        self,
        matrix: Any,
        study: optuna.Study,
        storage: BaseStorage,
        url: str,
        input_types: Mapping[str, str] | None,
        warnings: Iterable[str],
    ) -> None:
        self.matrix = matrix
        self.kind: str = matrix.kind
        self.name = study.study_name
        self.storage_url = url
        self._study = study
        self._storage = storage
        self._study_id = storage.get_study_id_from_name(study.study_name)
        self._input_types = dict(input_types or {})
        self.metric_name, self.maximize = _metric(matrix)
        attrs = self._attrs()
        self.seed: int = attrs.get("seed", 0)
        self.total: int | None = attrs.get("total")
        self.warnings: tuple[str, ...] = tuple(warnings)
        self._space: dict[str, Dimension] = {}
        self._hb_cache: list[list[tuple[int, float]]] | None = None
        if self.kind in _SAMPLED_KINDS:
            self._space, _ = optuna_space(matrix.hp_params())

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
    ) -> SweepStudy:
        """Create the sweep's study (``resume=False``) or load it (``resume=True``)."""
        backend, url = _open_storage(storage)
        _name, maximize = _metric(matrix)
        direction = StudyDirection.MAXIMIZE if maximize else StudyDirection.MINIMIZE
        pruner = build_pruner(getattr(matrix, "early_stopping", None))
        if resume:
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
            seed = int(attrs.get("seed", 0))
        else:
            seed = _rendered_int(matrix, "seed", getattr(matrix, "seed", None))
            if seed is None:
                seed = secrets.randbelow(2**31)
        sampler, warnings = cls._sampler(matrix, seed)
        if resume:
            study = optuna.load_study(
                study_name=study_name, storage=backend, sampler=sampler, pruner=pruner
            )
            return cls(matrix, study, backend, url, input_types, warnings)
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
        self = cls(matrix, study, backend, url, input_types, warnings)
        self._create(seed)
        return self

    @staticmethod
    def _sampler(matrix: Any, seed: int) -> tuple[optuna.samplers.BaseSampler, list[str]]:
        if matrix.kind not in _SAMPLED_KINDS:
            return RandomSampler(seed=seed), []
        space, warnings = optuna_space(matrix.hp_params())
        sampler, more = build_sampler(matrix, space, seed=seed)
        return sampler, warnings + more

    def _create(self, seed: int) -> None:
        """Record the plan and enqueue what is known up front; ``ready`` is set last, so a
        second process that opens the study meanwhile waits instead of finding nothing."""
        self._set("kind", self.kind)
        self._set("seed", seed)
        self._set("created", time.time())
        self.seed = seed
        matrix = self.matrix
        if self.kind == "grid":
            queued = grid_suggestions(matrix)
        elif self.kind == "mapping":
            queued = mapping_suggestions(matrix)
        elif self.kind == "random":
            queued = random_suggestions(matrix, seed=seed)
        else:
            queued = []
        if self.kind in ("grid", "mapping", "random"):
            self.total = len(queued)
        elif self.kind == "hyperband":
            self.total = sum(count for rungs in self._hb_plan() for count, _ in rungs)
        elif self.kind == "bayes":
            initial = _rendered_int(matrix, "numInitialRuns", matrix.num_initial_runs) or 0
            self.total = initial + (
                _rendered_int(matrix, "maxIterations", matrix.max_iterations) or 0
            )
        elif self.kind == "hyperopt":
            runs = _rendered_int(matrix, "numRuns", matrix.num_runs) or 0
            iterations = _rendered_int(matrix, "maxIterations", matrix.max_iterations) or 1
            self.total = runs * iterations
        else:
            self.total = None
        self._set("total", self.total)
        for index, params in enumerate(queued):
            self._enqueue(index, params, {})
        if self.kind == "hyperband":
            self._hb_enqueue(0, 0, [])
        self._set("ready", True)

    @staticmethod
    def latest(storage: str | None, prefix: str) -> str | None:
        """The newest study whose name starts with ``prefix`` (for ``run --resume``)."""
        backend, _ = _open_storage(storage)
        found: list[tuple[float, str]] = []
        for study in backend.get_all_studies():
            if study.study_name.startswith(prefix):
                created = study.user_attrs.get(_PREFIX + "created", 0.0)
                found.append((float(created), study.study_name))
        return max(found)[1] if found else None

    # -- attrs -------------------------------------------------------------------------------

    def _attrs(self) -> dict[str, Any]:
        raw = self._storage.get_study_user_attrs(self._study_id)
        return {k[len(_PREFIX) :]: v for k, v in raw.items() if k.startswith(_PREFIX)}

    def _set(self, key: str, value: Any) -> None:
        self._storage.set_study_user_attr(self._study_id, _PREFIX + key, value)

    def _trials(self, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]:
        trials = self._storage.get_all_trials(self._study_id, deepcopy=False, states=states)
        return [t for t in trials if not t.user_attrs.get("void")]

    def _trial_id(self, number: int) -> int:
        return self._storage.get_trial_id_from_study_id_trial_number(self._study_id, number)

    def _enqueue(
        self,
        index: int,
        params: Mapping[str, Any],
        attrs: Mapping[str, Any],
        *,
        fixed: Mapping[str, Any] | None = None,
        retry_of: int | None = None,
    ) -> None:
        user_attrs: dict[str, Any] = {
            "index": index,
            "params": _encode(dict(params)),
            "attrs": _encode(dict(attrs)),
        }
        if retry_of is not None:
            user_attrs["retry_of"] = retry_of
        self._study.enqueue_trial(dict(fixed or {}), user_attrs=user_attrs)

    # -- asking ------------------------------------------------------------------------------

    def ask(self) -> Suggestion | None:
        """The next trial to launch, or None (nothing now: wait for running trials, or done)."""
        attrs = self._attrs()
        if not attrs.get("ready") or attrs.get("stop_reason") is not None:
            return None
        if self.kind == "hyperband":
            self._hb_advance()
        if self.kind in _QUEUED_KINDS:
            return self._pop()
        return self._sample()

    def _pop(self) -> Suggestion | None:
        for trial in self._trials((TrialState.WAITING,)):
            trial_id = self._trial_id(trial.number)
            try:
                if not self._storage.set_trial_state_values(trial_id, state=TrialState.RUNNING):
                    continue
            except UpdateFinishedTrialError:
                continue
            return self._suggestion(trial)
        return None

    def _suggestion(
        self, trial: FrozenTrial, params: Mapping[str, Any] | None = None
    ) -> Suggestion:
        user = trial.user_attrs
        return Suggestion(
            number=trial.number,
            index=int(user["index"]),
            params=dict(params) if params is not None else _decode(user.get("params", {})),
            attrs=_decode(user.get("attrs", {})),
        )

    def _originals(self) -> int:
        return sum(1 for t in self._trials() if "retry_of" not in t.user_attrs)

    def _sample(self) -> Suggestion | None:
        waiting = self._trials((TrialState.WAITING,))
        if not waiting and self.total is not None and self._originals() >= self.total:
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
        raw: dict[str, Any] = {}
        for name, dim in self._space.items():
            dist = dim.distribution
            if isinstance(dist, optuna.distributions.CategoricalDistribution):
                raw[name] = trial.suggest_categorical(name, dist.choices)
            else:
                raw[name] = trial.suggest_float(name, dist.low, dist.high, log=dist.log)
        params = {name: self._space[name].decode(value) for name, value in raw.items()}
        trial.set_user_attr("index", index)
        trial.set_user_attr("params", _encode(params))
        trial.set_user_attr("attrs", {})
        return Suggestion(number=trial.number, index=index, params=params, attrs={})

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
        status: str,
        value: float | None = None,
        outputs: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        uuid: str | None = None,
        message: str = "",
    ) -> None:
        """Record how a trial ended (a Polyaxon status) and its metric value, when any.

        Without ``value``, the matrix metric is looked up in ``outputs`` then ``metrics``.
        """
        outputs, metrics = dict(outputs or {}), dict(metrics or {})
        if value is None and self.metric_name is not None:
            value = outputs.get(self.metric_name, metrics.get(self.metric_name))
        number_value: float | None = None
        if value is not None and not isinstance(value, bool):
            try:
                number_value = float(value)
            except (TypeError, ValueError):
                number_value = None
        trial_id = self._trial_id(number)
        for key, item in (
            ("status", status),
            ("outputs", _encode(outputs)),
            ("metrics", _encode(metrics)),
            ("uuid", uuid),
            ("message", message),
            ("value", _encode(number_value)),
        ):
            self._storage.set_trial_user_attr(trial_id, key, item)
        if status == "succeeded" and number_value is not None and math.isfinite(number_value):
            state, values = TrialState.COMPLETE, [number_value]
        elif status == "stopped":
            state, values = TrialState.PRUNED, None
        else:
            state, values = TrialState.FAIL, None
        with contextlib.suppress(UpdateFinishedTrialError):
            self._storage.set_trial_state_values(trial_id, state=state, values=values)

    def stop(self, reason: str) -> None:
        """Early stopping: ask nothing more and drop the queued trials."""
        self._set("stop_reason", reason)
        for trial in self._trials((TrialState.WAITING,)):
            trial_id = self._trial_id(trial.number)
            self._storage.set_trial_user_attr(trial_id, "dropped", True)
            with contextlib.suppress(UpdateFinishedTrialError):
                self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

    @property
    def stop_reason(self) -> str | None:
        return self._attrs().get("stop_reason")

    def recover(self) -> list[int]:
        """Fail the trials a dead parent left running and queue them again (same index and
        params). Only call it while no other process runs this study."""
        indexes = []
        for trial in self._trials((TrialState.RUNNING,)):
            trial_id = self._trial_id(trial.number)
            self._storage.set_trial_user_attr(trial_id, "status", "failed")
            self._storage.set_trial_user_attr(
                trial_id, "message", "still running when the sweep's parent stopped; retried"
            )
            try:
                self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)
            except UpdateFinishedTrialError:
                continue
            if "index" not in trial.user_attrs:
                continue
            user = trial.user_attrs
            fixed = dict(trial.params) if self.kind in _SAMPLED_KINDS else None
            if self.stop_reason is None:
                self._enqueue(
                    int(user["index"]),
                    _decode(user.get("params", {})),
                    _decode(user.get("attrs", {})),
                    fixed=fixed,
                    retry_of=trial.number,
                )
            indexes.append(int(user["index"]))
        if self.kind == "iterative":
            self._set("tuner_pending", None)
        return sorted(indexes)

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

    @staticmethod
    def _status(trial: FrozenTrial) -> str:
        if trial.state == TrialState.WAITING:
            return "pending"
        if trial.state == TrialState.RUNNING:
            return "running"
        status = trial.user_attrs.get("status")
        if status:
            return str(status)
        return {TrialState.COMPLETE: "succeeded", TrialState.PRUNED: "stopped"}.get(
            trial.state, "failed"
        )

    def _record(self, trial: FrozenTrial) -> TrialRecord:
        user = trial.user_attrs
        value = _decode(user.get("value"))
        if value is None and trial.state == TrialState.COMPLETE:
            value = trial.value
        return TrialRecord(
            number=trial.number,
            index=int(user["index"]),
            params=_decode(user.get("params", {})),
            status=self._status(trial),
            value=value,
            outputs=_decode(user.get("outputs", {})),
            metrics=_decode(user.get("metrics", {})),
            uuid=user.get("uuid"),
            attrs=_decode(user.get("attrs", {})),
            message=user.get("message", "") or "",
        )

    def history(self) -> list[TrialRecord]:
        """Every trial launched or queued (latest attempt per index), ordered by index."""
        return [self._record(t) for _, t in sorted(self._latest().items())]

    def best(self) -> TrialRecord | None:
        """The succeeded trial with the best metric value (None without a metric)."""
        scored = [r for r in self.history() if r.status == "succeeded" and r.value is not None]
        if not scored:
            return None
        sign = -1.0 if self.maximize else 1.0
        return min(scored, key=lambda r: (sign * float(r.value or 0.0), r.index))

    def is_finished(self) -> bool:
        """Nothing more will ever be asked and nothing is running."""
        attrs = self._attrs()
        if not attrs.get("ready"):
            return False
        running = self._trials((TrialState.RUNNING,))
        if attrs.get("stop_reason") is not None:
            return not running
        if self.kind == "hyperband":
            self._hb_advance()
            attrs = self._attrs()
        if running or self._trials((TrialState.WAITING,)):
            return False
        if self.kind in ("grid", "mapping", "random"):
            return True
        if self.kind == "hyperband":
            return bool(attrs.get("hb_done"))
        if self.kind == "iterative":
            return self._iterative_done(attrs) and attrs.get("tuner_pending") is None
        return self.total is not None and self._originals() >= self.total

    # -- hyperband ---------------------------------------------------------------------------

    def _hb_plan(self) -> list[list[tuple[int, float]]]:
        """Per (bracket, rung) in run order: the (configs, resource) planned, with rung 0
        capped by what random search can draw (a small discrete space)."""
        if self._hb_cache is not None:
            return self._hb_cache
        plan = []
        for bracket, entry in enumerate(self._hb_schedule()):
            first = len(self._hb_configs(bracket, entry.n))
            eta = Fraction(self._eta())
            rungs = [
                (math.floor(first / eta**k) if k else first, resource)
                for k, (_count, resource) in enumerate(entry.rungs)
            ]
            plan.append(rungs)
        self._hb_cache = plan
        return plan

    def _eta(self) -> float:
        eta = self.matrix.eta
        if isinstance(eta, str):
            raise SweepStudyError(f"hyperband `eta` is a template ({eta!r}): render it first")
        return float(eta)

    def _hb_schedule(self) -> list[Any]:
        max_iterations = _rendered_int(self.matrix, "maxIterations", self.matrix.max_iterations)
        return hyperband_schedule(int(max_iterations or 1), self._eta())

    def _hb_configs(self, bracket: int, count: int) -> list[dict[str, Any]]:
        return random_suggestions(self.matrix, seed=self.seed + 7919 * bracket, num_runs=count)

    def _resource(self, value: float) -> int | float:
        resource = self.matrix.resource
        declared = self._input_types.get(resource.name)
        kind = declared if declared in ("int", "float") else resource.type
        return int(value) if kind == "int" else float(value)

    def _hb_enqueue(
        self, bracket: int, rung: int, configs: list[tuple[int, dict[str, Any]]]
    ) -> None:
        plan = self._hb_plan()
        offset = sum(count for rungs in plan[:bracket] for count, _ in rungs)
        offset += sum(count for count, _ in plan[bracket][:rung])
        resource = self._resource(plan[bracket][rung][1])
        if rung == 0:
            first = self._hb_configs(bracket, self._hb_schedule()[bracket].n)
            start = sum(rungs[0][0] for rungs in plan[:bracket])
            configs = [(start + i, params) for i, params in enumerate(first)]
        name = self.matrix.resource.name
        for position, (config, params) in enumerate(configs):
            attrs = {"bracket": bracket, "rung": rung, "config": config, "resource": resource}
            self._enqueue(offset + position, {**params, name: resource}, attrs)
        self._set("hb_current", [bracket, rung])

    def _hb_advance(self) -> None:
        """Enqueue the next rung (or bracket) once the current one has finished."""
        attrs = self._attrs()
        if attrs.get("hb_done") or attrs.get("stop_reason") is not None:
            return
        current = attrs.get("hb_current")
        if current is None:
            return
        bracket, rung = current
        mine = [
            t
            for t in self._latest().values()
            if t.user_attrs.get("attrs", {}).get("bracket") == bracket
            and t.user_attrs.get("attrs", {}).get("rung") == rung
        ]
        if any(t.state in (TrialState.WAITING, TrialState.RUNNING) for t in mine):
            return
        plan = self._hb_plan()
        keep = plan[bracket][rung + 1][0] if rung + 1 < len(plan[bracket]) else 0
        scored = []
        for trial in mine:
            record = self._record(trial)
            if record.status == "succeeded" and record.value is not None:
                scored.append(record)
        scored.sort(key=lambda r: (-r.value if self.maximize else r.value, r.index))
        promoted = scored[:keep]
        if promoted:
            name = self.matrix.resource.name
            configs = [
                (int(r.attrs["config"]), {k: v for k, v in r.params.items() if k != name})
                for r in sorted(promoted, key=lambda r: r.attrs["config"])
            ]
            # the promoted order is by config id, so indexes stay deterministic
            self._hb_enqueue(bracket, rung + 1, configs)
            return
        if bracket + 1 < len(plan):
            self._hb_enqueue(bracket + 1, 0, [])
        else:
            self._set("hb_done", True)

    # -- iterative ---------------------------------------------------------------------------

    def _iterative_done(self, attrs: Mapping[str, Any]) -> bool:
        limit = _rendered_int(self.matrix, "maxIterations", self.matrix.max_iterations)
        iteration = int(attrs.get("iteration", 0))
        return bool(attrs.get("tuner_done")) or (limit is not None and iteration >= limit)

    def tuner_request(self) -> dict[str, Any] | None:
        """The tuner's params when it must run now: the previous suggestions have all finished
        and neither ``maxIterations`` nor an empty list has ended the sweep."""
        if self.kind != "iterative":
            return None
        attrs = self._attrs()
        if attrs.get("stop_reason") is not None or self._iterative_done(attrs):
            return None
        if attrs.get("tuner_pending") is not None:
            return None
        if self._trials((TrialState.WAITING, TrialState.RUNNING)):
            return None
        iteration = int(attrs.get("iteration", 0))
        self._set("tuner_pending", iteration)
        history = self.history()
        return {
            "matrix": self.matrix.model_dump(mode="json", by_alias=True, exclude_none=True),
            "iteration": iteration,
            "configs": [record.params for record in history],
            "metrics": [{**record.outputs, **record.metrics} for record in history],
        }

    def add_suggestions(self, suggestions: list[dict[str, Any]]) -> None:
        """The tuner's answer: enqueue the suggestions; an empty list ends the sweep."""
        attrs = self._attrs()
        iteration = int(attrs.get("iteration", 0))
        self._set("tuner_pending", None)
        if not suggestions:
            self._set("tuner_done", True)
            return
        start = max(self._latest(), default=-1) + 1
        for position, params in enumerate(suggestions):
            self._enqueue(start + position, dict(params), {"iteration": iteration})
        self._set("iteration", iteration + 1)
