"""The default sweep storage: one append-only journal file per sweep, and its damage.

Optuna's journal storage replays its whole file on every open, so a journal shared by every
sweep of an artifacts root made each new sweep pay for all the earlier ones (a killed sweep of
tens of thousands of trials left a file that made a small sweep several times slower to start)
and let one damaged line break every later sweep. Each sweep therefore writes its own file,
``<artifacts root>/.sweeps/<study name>.journal``: a sweep never opens another's, a finished
sweep's journal stays the size of that sweep, and ``run --resume`` and ``dashboard`` find a
sweep by its file name (``<op>-<hash>-<YYYYmmdd-HHMMSS>-<rnd>``) without opening any other.

The single ``<artifacts root>/sweeps.journal`` of earlier versions (``LEGACY_FILE``) is only
read when no per-sweep journal matches: an old sweep can still be resumed or shown from it, and
new sweeps never touch it.

Damage: a process killed in the middle of an append leaves a last line without its newline.
Optuna skips such a line when reading, but the next append would be glued onto it and make a
garbage line in the middle of the file, which Optuna refuses on every later read. So before a
journal is opened a torn last line is cut off (under the journal's own lock, so no live writer
is interrupted) and kept next to it in ``<journal>.torn``; a garbage line anywhere else is
named (file and line number) by ``JournalDamagedError`` instead of a ``JSONDecodeError``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.search._trial_records import SweepStudyError

__all__ = [
    "JOURNAL_SUFFIX",
    "LEGACY_FILE",
    "SWEEPS_DIR",
    "JournalDamagedError",
    "damage_error",
    "journal_path",
    "repair_torn_tail",
    "sweep_journals",
]

SWEEPS_DIR = ".sweeps"
"""The folder, under the artifacts root, of the sweeps' own journal files."""

JOURNAL_SUFFIX = ".journal"

LEGACY_FILE = "sweeps.journal"
"""The one journal all sweeps shared before each got its own (read only as a fallback)."""

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,150}")
_STAMP = re.compile(r"-(\d{8}-\d{6})-[0-9a-f]+$")
_CHUNK = 1 << 20


class JournalDamagedError(SweepStudyError):
    """A journal file holds a line Optuna cannot replay; ``problem`` locates it."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(problem.format())


def journal_path(artifacts_root: Path, study_name: str) -> Path:
    """The journal file of the sweep study ``study_name`` under ``artifacts_root``.

    A generated study name is a safe file name as it is; any other name gets a readable
    stem, a ``+`` (which no safe name has, so the file never passes for one) and a digest, so
    two names never share a file.
    """
    folder = Path(artifacts_root) / SWEEPS_DIR
    if _SAFE_NAME.fullmatch(study_name):
        return folder / f"{study_name}{JOURNAL_SUFFIX}"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", study_name).strip("._-")[:100] or "study"
    digest = hashlib.sha256(study_name.encode("utf-8")).hexdigest()[:8]
    return folder / f"{stem}+{digest}{JOURNAL_SUFFIX}"


def study_name_of(path: Path) -> str | None:
    """The study name a journal's file name spells, or None when it was sanitised."""
    stem = path.name[: -len(JOURNAL_SUFFIX)]
    return stem if journal_path(path.parent.parent, stem) == path else None


def _newest_key(path: Path) -> tuple[str, float, str]:
    """Sort key, newest last: the creation stamp in a generated name, else the file's mtime."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    found = _STAMP.search(path.name[: -len(JOURNAL_SUFFIX)])
    stamp = found.group(1) if found else time.strftime("%Y%m%d-%H%M%S", time.localtime(mtime))
    return stamp, mtime, path.name


def sweep_journals(artifacts_root: Path, pattern: str = "") -> list[Path]:
    """The per-sweep journals whose study name matches ``pattern`` (a regex searched from the
    start of the name; "" for all), newest first, found by file name alone."""
    folder = Path(artifacts_root) / SWEEPS_DIR
    if not folder.is_dir():
        return []
    matcher = re.compile(pattern)
    found = [
        path
        for path in folder.glob(f"*{JOURNAL_SUFFIX}")
        if path.is_file() and matcher.match(path.name[: -len(JOURNAL_SUFFIX)])
    ]
    return sorted(found, key=_newest_key, reverse=True)


def _last_byte(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            if file.tell() == 0:
                return b""
            file.seek(-1, os.SEEK_END)
            return file.read(1)
    except OSError:
        return b""


def _cut_point(path: Path) -> int:
    """The offset just after the journal's last newline (0 when it has none)."""
    with path.open("rb") as file:
        end = file.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            start = max(0, position - _CHUNK)
            file.seek(start)
            chunk = file.read(position - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                return start + newline + 1
            position = start
    return 0


def _count_lines(path: Path, upto: int) -> int:
    count = 0
    with path.open("rb") as file:
        while file.tell() < upto:
            count += file.read(min(_CHUNK, upto - file.tell())).count(b"\n")
    return count


def repair_torn_tail(path: Path, lock: Any) -> str | None:
    """Cut a last line left without its newline (a write cut short) off ``path``.

    Taken under ``lock`` (the journal's own), so the line is never one a live process is
    still writing. The cut bytes are appended to ``<path>.torn``. Returns a sentence saying
    what was done, or None when the journal was whole.
    """
    if _last_byte(path) in (b"", b"\n"):
        return None
    lock.acquire()
    try:
        if _last_byte(path) in (b"", b"\n"):
            return None
        cut = _cut_point(path)
        with path.open("r+b") as file:
            file.seek(cut)
            torn = file.read()
            line = _count_lines(path, cut) + 1
            with Path(f"{path}.torn").open("ab") as kept:
                kept.write(torn + b"\n")
            file.truncate(cut)
    finally:
        lock.release()
    return (
        f"{path}:{line}: the sweep journal's last line was cut short ({len(torn)} bytes, a "
        f"write its process did not finish): removed (kept in {path}.torn), the {line - 1} "
        "line(s) before it are intact"
    )


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as file:
        yield from enumerate(file, start=1)


def _bad_line(path: Path) -> tuple[int, str, str] | None:
    """The first line that is not a journal record: (line number, what is wrong, its start)."""
    for number, line in _lines(path):
        if not line.endswith(b"\n"):
            continue  # a torn last line: Optuna skips it
        try:
            record = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            return number, f"not a JSON record ({exc})", line[:60].decode("utf-8", "replace")
        if not isinstance(record, dict) or not isinstance(record.get("op_code"), int):
            return number, "not an Optuna journal record", line[:60].decode("utf-8", "replace")
    return None


def damage_error(path: Path, error: BaseException) -> JournalDamagedError:
    """The one-line error for a journal Optuna could not replay (``error``: what it raised)."""
    found = _bad_line(path)
    hint = (
        f"move {path} aside (its sweep cannot be resumed from it) and run again, "
        "or run with a new --storage"
    )
    if found is None:
        return JournalDamagedError(
            Problem(
                f"damaged sweep journal: a record cannot be replayed "
                f"({type(error).__name__}: {error})",
                rule="journal_damaged",
                file=str(path),
                hint=hint,
            )
        )
    line, what, start = found
    return JournalDamagedError(
        Problem(
            f"damaged sweep journal: line {line} is {what}",
            rule="journal_damaged",
            file=str(path),
            line=line,
            value=start.strip(),
            hint=hint,
        )
    )
