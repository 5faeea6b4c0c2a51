"""The sessions' journals: where each session (`runtime.session`) keeps its journal, what one
says, and the rule by which a dead session's journal holds back every reader of its database
until `connect` marks its runs crashed. Standard library only, so the thin client checks it
before Prefect loads, and the one definition `runtime.session` (which writes and settles the
journals) uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from polyaxon_prefect.client.run_files._run_paths import resolve_artifacts_root
from polyaxon_prefect.client.server._local_server import pid_alive, prefect_home

__all__ = [
    "SessionJournal",
    "dead_session_of",
    "home_database_target",
    "journal_dir",
    "read_journal",
]


def home_database_target() -> str:
    """The local database of ``PREFECT_HOME``, whichever local server (the background one, a
    temporary one) serves it now: the target a session's journal names (`runtime.session`)."""
    return "home:" + str(prefect_home().resolve())


def journal_dir() -> Path:
    """Where each session keeps its journal (`runtime.session`): a dead session's journal
    means runs to mark crashed before anything reads them."""
    return resolve_artifacts_root() / ".sessions"


@dataclass(frozen=True)
class SessionJournal:
    """What a session's journal says (`runtime.session.Session._write_journal`: a header of its
    ``pid`` and ``target`` lines, then a line per flow run and per settlement)."""

    pid: int
    target: str | None
    """The database of its runs; None for a header cut before its target line (the session
    died writing it)."""
    flow_runs: tuple[str, ...] = ()
    settlements: tuple[str, ...] = ()


def read_journal(path: Path) -> SessionJournal | None:
    """The journal at ``path``; None where there is none to settle: it is gone (its session
    ended between a listing and this read), cannot be read, or names no process (an empty
    file is a live session's between creating it and writing its header)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return None
    values: dict[str, list[str]] = {}
    for line in lines:
        key, _, value = line.partition(" ")
        values.setdefault(key, []).append(value)
    try:
        pid = int(values["pid"][0])
    except (KeyError, ValueError):
        return None
    if pid <= 0:  # 0 and -1 name process groups, not a session's process
        return None
    return SessionJournal(
        pid,
        values.get("target", [None])[0],
        tuple(values.get("flow-run", ())),
        tuple(values.get("settle", ())),
    )


def dead_session_of(journal: SessionJournal, target: str) -> bool:
    """Whether ``journal`` is a dead session's on the database ``target``: what `connect`
    settles (`runtime.session.recover_stale_sessions`) and what keeps the thin client off that
    database until then, one rule for both. A header cut before its target line counts as
    every database's (whichever the session used, the next command settles it there)."""
    alive = journal.pid == os.getpid() or pid_alive(journal.pid)
    return not alive and journal.target in (None, target)
