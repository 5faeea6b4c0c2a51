"""Where a sweep's Optuna study lives: a journal file, an SQLite file, memory or a server.

The default is an append-only journal file under the artifacts root the caller passes in (the
search package does not resolve the artifacts root itself: that is the runtime's business).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optuna.storages import BaseStorage, InMemoryStorage, RDBStorage

from polyaxon_prefect.search._records import SweepStudyError

__all__ = ["DEFAULT_FILE", "MEMORY_URL", "open_storage"]

MEMORY_URL = ":memory:"
"""One in-memory storage per process (tests, and throwaway sweeps)."""

DEFAULT_FILE = "sweeps.journal"
"""The journal file, under the artifacts root, used when no storage is given."""

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


def open_storage(
    storage: str | None, *, artifacts_root: Path | None = None
) -> tuple[BaseStorage, str]:
    """The storage for ``storage`` and the URL (or path) it was opened from.

    Args:
        storage: ``None`` (the default journal file, ``artifacts_root / DEFAULT_FILE``), a file
            path (a journal file, or an SQLite database for ``.db``/``.sqlite`` names),
            ``":memory:"``, or any Optuna storage URL (``sqlite:///...``,
            ``postgresql+psycopg2://...``).
        artifacts_root: Where the default journal file goes; required when ``storage`` is None.

    Raises:
        SweepStudyError: ``storage`` is None and so is ``artifacts_root``.
    """
    if storage in (MEMORY_URL, "memory"):
        return _MEMORY.setdefault(MEMORY_URL, InMemoryStorage()), MEMORY_URL
    if storage is None:
        if artifacts_root is None:
            raise SweepStudyError(
                "a sweep study needs a storage, or an artifacts root for the default one"
            )
        storage = str(Path(artifacts_root) / DEFAULT_FILE)
    if "://" not in storage:
        path = Path(storage).expanduser().absolute()
        if path.suffix.lower() not in _SQLITE_SUFFIXES:
            return _journal_storage(path), str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        storage = f"sqlite:///{path}"
    if storage.startswith("sqlite:"):
        return _sqlite_storage(storage), storage
    return RDBStorage(storage), storage
