"""A run's log lines read from the files it keeps, for ``logs`` when the Prefect server has none
(its database was reset, a new server, API logging off).

Every process of a run writes its lines (masked, as they went to Prefect) under
``<run>/logs/``: ``job.log`` for a job and its init steps, ``<replica>.log`` for each replica
of a distributed op (`runtime._replicas`). A DAG's ops and a sweep's trials are runs of their
own, with their own directories: a DAG or a sweep records each one it starts in its own
``logs/runs.jsonl`` (`record_child`), so the files alone lead from the run to every line of it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from polyaxon_prefect.client.logs._log_lines import LogLine
from polyaxon_prefect.runtime._context import find_run_path
from polyaxon_prefect.runtime._outcome import LOG_FILE

__all__ = [
    "CHILDREN_FILE",
    "LOGS_DIR",
    "ChildIndex",
    "log_files",
    "read_log_files",
    "record_child",
]

LOGS_DIR = "logs"
CHILDREN_FILE = "runs.jsonl"
"""A DAG's or a sweep's record of the runs it started: ``{"op": ..., "uuid": ...}`` a line."""
_MAX_DEPTH = 32


def record_child(run_path: Path, op: str, uuid: str) -> None:
    """Note in ``run_path``'s logs folder that op (or trial) ``op`` runs as run ``uuid``. An
    index for `read_log_files`, so a write that fails is no failure of the run."""
    with ChildIndex(run_path) as index:
        index.record(op, uuid)


class ChildIndex:
    """`record_child` for the many children of one run (a DAG's ops): the index is opened
    once and each child is one appending write, instead of a folder check, an open and a close
    on every op's start (each system call a wait for the GIL on a busy machine). Each line
    reaches the file when it is recorded, as before; `close` when the run ends."""

    def __init__(self, run_path: Path) -> None:
        self.run_path = run_path
        self._fd: int | None = None

    def record(self, op: str, uuid: str) -> None:
        line = (json.dumps({"op": op, "uuid": uuid}) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):
            if self._fd is None:
                folder = self.run_path / LOGS_DIR
                folder.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
                self._fd = os.open(folder / CHILDREN_FILE, flags, 0o644)
            os.write(self._fd, line)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> ChildIndex:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def recorded_children(run_path: Path) -> dict[str, str]:
    """Op -> run uuid of the runs ``run_path`` recorded (`record_child`), in start order."""
    try:
        text = (run_path / LOGS_DIR / CHILDREN_FILE).read_text(encoding="utf-8")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        with contextlib.suppress(ValueError, TypeError, KeyError):
            entry = json.loads(line)
            found[str(entry["op"])] = str(entry["uuid"])
    return found


def log_files(run_path: Path) -> list[tuple[str | None, Path]]:
    """The log files of one run directory, each with the replica it is of (None: the job's
    own ``job.log``), ``job.log`` first (init steps run before the replicas), then the
    replicas by name."""
    folder = run_path / LOGS_DIR
    if not folder.is_dir():
        return []
    found: list[tuple[str | None, Path]] = []
    if (folder / LOG_FILE).is_file():
        found.append((None, folder / LOG_FILE))
    others = sorted(p for p in folder.glob("*.log") if p.name != LOG_FILE and p.is_file())
    found += [(path.stem, path) for path in others]
    return found


def _lines(path: Path, replica: str | None, op: str | None) -> list[LogLine]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    prefix = f"[{replica}] " if replica is not None else ""
    return [LogLine(prefix + line, op=op) for line in text.splitlines()]


def read_log_files(
    run_path: Path,
    children: Mapping[str, str] | None = None,
    artifacts_root: str | Path | None = None,
) -> list[LogLine]:
    """Every line the run at ``run_path`` kept, then each child's: ``children`` (op path ->
    run uuid) when given, else the runs it recorded, and theirs (``nested/a``,
    ``tune/trial-3``); one whose directory is gone has no lines. A replica's lines are
    prefixed ``[worker-1] `` as they are in Prefect's logs."""
    lines: list[LogLine] = []
    for replica, path in log_files(run_path):
        lines += _lines(path, replica, None)
    if children is not None:
        for op, uuid in children.items():
            child = find_run_path(uuid, artifacts_root)
            if child is not None:
                lines += _own_lines(child, op)
        return lines
    return lines + _below(run_path, "", artifacts_root, 0)


def _own_lines(run_path: Path, op: str) -> list[LogLine]:
    lines: list[LogLine] = []
    for replica, path in log_files(run_path):
        lines += _lines(path, replica, op)
    return lines


def _below(run_path: Path, prefix: str, root: str | Path | None, depth: int) -> list[LogLine]:
    """The lines of the runs ``run_path`` recorded, and of theirs, each under its op path."""
    lines: list[LogLine] = []
    if depth >= _MAX_DEPTH:
        return lines
    for op, uuid in recorded_children(run_path).items():
        child = find_run_path(uuid, root)
        if child is not None and child != run_path:
            lines += _own_lines(child, prefix + op)
            lines += _below(child, f"{prefix}{op}/", root, depth + 1)
    return lines
