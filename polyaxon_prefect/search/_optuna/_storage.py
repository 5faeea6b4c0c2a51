"""Where a sweep's Optuna study lives: a journal file, an SQLite file, memory or a server.

The default is the sweep's own append-only journal file under the artifacts root the caller
passes in (``_journal``: one file per sweep, so no sweep replays or is broken by another's; the
search package does not resolve the artifacts root itself: that is the runtime's business).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.storages import BaseStorage, InMemoryStorage, RDBStorage
from optuna.trial import TrialState

from polyaxon_prefect.search._optuna._journal import (
    LEGACY_FILE,
    damage_error,
    journal_path,
    repair_torn_tail,
)
from polyaxon_prefect.search._trial_records import SweepStudyError

__all__ = [
    "MEMORY_URL",
    "default_storage",
    "finish_trial",
    "open_storage",
    "open_storage_noted",
    "set_trial_user_attrs",
]

MEMORY_URL = ":memory:"
"""One in-memory storage per process (tests, and throwaway sweeps)."""

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_MEMORY: dict[str, InMemoryStorage] = {}


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


def _journal_storage(path: Path, notes: list[str]) -> BaseStorage:
    """An append-only journal file: Optuna's storage for one machine without a server.

    Every change is one appended line under a file lock, so an ask plus a tell costs a
    fraction of the same work in an SQLite file (where each transaction syncs the file);
    several processes can share it (the lock serialises their appends, and a waiting
    trial claimed by one is seen as running by the others). A torn last line is cut off first
    (said in ``notes``); a line Optuna cannot replay is a ``JournalDamagedError`` naming it.
    """
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileOpenLock

    path.parent.mkdir(parents=True, exist_ok=True)
    # created owner-only: its trials' user attrs hold the real values of their outputs
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    lock = JournalFileOpenLock(str(path))
    note = repair_torn_tail(path, lock)
    if note is not None:
        notes.append(note)
    try:
        return JournalStorage(_whole_lines_backend(path, lock))
    except (ValueError, KeyError, TypeError, IndexError, AssertionError) as exc:  # bad lines
        raise damage_error(path, exc) from None


def _whole_lines_backend(path: Path, lock: Any) -> Any:
    """Optuna's ``JournalFileBackend`` whose failed append leaves the file as it was.

    Optuna writes a batch of lines through a buffered file: a write that fails half-way (a
    full disk) leaves a line cut short, which the next open has to repair. Here the batch
    goes out unbuffered and, on any ``OSError``, the file is cut back to its size before the
    write (cutting frees space, so it works on a full disk) before the error goes on.
    """
    from optuna.storages.journal import JournalFileBackend
    from optuna.storages.journal._file import get_lock_file

    class _WholeLines(JournalFileBackend):
        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            data = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
            with get_lock_file(self._lock):
                fd = os.open(self._file_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    start = os.fstat(fd).st_size
                    try:
                        view = memoryview(data.encode("utf-8"))
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fsync(fd)
                    except OSError:
                        os.ftruncate(fd, start)
                        raise
                finally:
                    os.close(fd)

    return _WholeLines(str(path), lock_obj=lock)


def set_trial_user_attrs(storage: BaseStorage, trial_id: int, attrs: Mapping[str, Any]) -> None:
    """Set every one of ``attrs`` on a trial, in one journal append where ``storage`` is a
    journal file.

    Optuna's ``set_trial_user_attr`` appends one line per attribute, each under the file lock
    and followed by an ``fsync``: the six attributes a finished trial records cost six syncs, a
    few ms each, in the sweep's one loop thread. Here the same lines (the very records
    ``set_trial_user_attr`` writes, one attribute each, replayed the same way) go in one
    ``append_logs``: one lock, one sync. Other storages (SQLite, memory, a server) and a journal
    of an Optuna whose internals differ get one ``set_trial_user_attr`` per attribute.
    """
    finish_trial(storage, trial_id, attrs, state=None)


def finish_trial(
    storage: BaseStorage,
    trial_id: int,
    attrs: Mapping[str, Any],
    *,
    state: TrialState | None,
    values: Sequence[float] | None = None,
    params: Mapping[str, tuple[float, BaseDistribution]] | None = None,
) -> None:
    """Set ``attrs`` on a trial, then its ``params`` (internal value and distribution, as
    ``set_trial_param`` takes them), then (unless ``state`` is None) its finished ``state`` and
    ``values``: on a journal file, all in one append and one sync (`set_trial_user_attrs`).

    The state line is the one Optuna's ``set_trial_state_values`` writes for a finished state
    (its checks are for ``RUNNING`` only), so a replay reads the same trial. A trial that is
    finished already raises ``UpdateFinishedTrialError``, as the separate calls do.
    """
    from optuna.distributions import distribution_to_json
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.storages import JournalStorage
    from optuna.storages.journal._storage import JournalOperation

    if state is not None and not state.is_finished():
        raise ValueError(f"finish_trial sets a finished state, not {state.name}")
    backend = getattr(storage, "_backend", None)
    replay = getattr(storage, "_replay_result", None)
    lock = getattr(storage, "_thread_lock", None)
    sync = getattr(storage, "_sync_with_backend", None)
    append = getattr(backend, "append_logs", None)
    worker_id = getattr(replay, "worker_id", None)
    if not isinstance(storage, JournalStorage) or None in (lock, sync, append, worker_id):
        for key, value in attrs.items():
            storage.set_trial_user_attr(trial_id, key, value)
        for name, (internal, distribution) in (params or {}).items():
            storage.set_trial_param(trial_id, name, internal, distribution)
        if state is not None:
            storage.set_trial_state_values(trial_id, state=state, values=values)
        return
    logs: list[dict[str, Any]] = [
        {
            "op_code": JournalOperation.SET_TRIAL_USER_ATTR,
            "worker_id": worker_id,
            "trial_id": trial_id,
            "user_attr": {key: value},
        }
        for key, value in attrs.items()
    ]
    # the lines `set_trial_param` writes, before the state line (a finished trial takes none)
    logs += [
        {
            "op_code": JournalOperation.SET_TRIAL_PARAM,
            "worker_id": worker_id,
            "trial_id": trial_id,
            "param_name": name,
            "param_value_internal": internal,
            "distribution": distribution_to_json(distribution),
        }
        for name, (internal, distribution) in (params or {}).items()
    ]
    trial = storage.get_trial(trial_id)
    if trial.state.is_finished():
        # written anyway, these lines would fail every later sync of this process
        raise UpdateFinishedTrialError(f"trial {trial.number} is finished already")
    if state is not None:
        completed = datetime.now(tz=UTC).isoformat(timespec="microseconds")
        logs.append(
            {
                "op_code": JournalOperation.SET_TRIAL_STATE_VALUES,
                "worker_id": worker_id,
                "trial_id": trial_id,
                "state": state,
                "values": None if values is None else list(values),
                "datetime_complete": completed,
            }
        )
    with lock:  # type: ignore[union-attr]
        append(logs)  # type: ignore[misc]
        sync()  # type: ignore[misc]


def default_storage(artifacts_root: Path | None, study_name: str | None, *, resume: bool) -> str:
    """The default storage of ``study_name``: its own journal under ``artifacts_root``.

    Resuming a sweep that has no journal of its own, when the shared ``sweeps.journal`` of
    earlier versions exists, gives that file: the old sweep lives there.

    Raises:
        SweepStudyError: no artifacts root, or no study name.
    """
    if artifacts_root is None or study_name is None:
        raise SweepStudyError(
            "a sweep study needs a storage, or an artifacts root and a study name for the "
            "default one"
        )
    path = journal_path(Path(artifacts_root), study_name)
    legacy = Path(artifacts_root) / LEGACY_FILE
    if resume and not path.exists() and legacy.is_file():
        return str(legacy)
    return str(path)


def open_storage_noted(
    storage: str | None,
    *,
    artifacts_root: Path | None = None,
    study_name: str | None = None,
    resume: bool = False,
) -> tuple[BaseStorage, str, list[str]]:
    """``open_storage``, plus what was repaired on the way (sentences for the sweep's log)."""
    if storage in (MEMORY_URL, "memory"):
        return _MEMORY.setdefault(MEMORY_URL, InMemoryStorage()), MEMORY_URL, []
    if storage is None:
        storage = default_storage(artifacts_root, study_name, resume=resume)
    notes: list[str] = []
    if "://" not in storage:
        path = Path(storage).expanduser().absolute()
        if path.suffix.lower() not in _SQLITE_SUFFIXES:
            return _journal_storage(path, notes), str(path), notes
        path.parent.mkdir(parents=True, exist_ok=True)
        storage = f"sqlite:///{path}"
    if storage.startswith("sqlite:"):
        return _sqlite_storage(storage), storage, notes
    return _database_storage(storage), storage, notes


def _database_storage(url: str) -> RDBStorage:
    """Optuna's storage on a database server (PostgreSQL, MySQL).

    Raises:
        SweepStudyError: the server cannot be reached or refuses us: one line naming the URL
            (its password hidden) and the driver's reason, not SQLAlchemy's traceback.
    """
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return RDBStorage(url)
    except SQLAlchemyError as error:
        cause: object = getattr(error, "orig", None) or error  # the driver's own words
        reason = " ".join(str(cause).split("(Background on")[0].split())
        raise SweepStudyError(
            f"the sweep's storage {_shown(url)} cannot be reached: {reason}"
        ) from None


def _shown(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if not parts.password:
        return url
    return urllib.parse.urlunsplit(
        parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    )


def open_storage(
    storage: str | None,
    *,
    artifacts_root: Path | None = None,
    study_name: str | None = None,
    resume: bool = False,
) -> tuple[BaseStorage, str]:
    """The storage for ``storage`` and the URL (or path) it was opened from.

    Args:
        storage: ``None`` (the sweep's own journal file under ``artifacts_root``, see
            ``default_storage``), a file path (a journal file, or an SQLite database for
            ``.db``/``.sqlite`` names), ``":memory:"``, or any Optuna storage URL
            (``sqlite:///...``, ``postgresql+psycopg2://...``).
        artifacts_root: Where the default journal files go; required when ``storage`` is None.
        study_name: The sweep's study; required when ``storage`` is None.
        resume: Whether the study is resumed (an old one may live in the legacy shared file).

    Raises:
        SweepStudyError: ``storage`` is None and so is ``artifacts_root`` or ``study_name``.
        JournalDamagedError: the journal file has a line that cannot be replayed.
    """
    backend, url, _notes = open_storage_noted(
        storage, artifacts_root=artifacts_root, study_name=study_name, resume=resume
    )
    return backend, url
