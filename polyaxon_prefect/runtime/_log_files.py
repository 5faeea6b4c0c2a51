"""A run's log lines read from the files it keeps, for ``logs`` when the Prefect server has none
(its database was reset, a new server, API logging off).

Every process of a run writes its lines (masked, as they went to Prefect) under
``<run>/logs/``: ``job.log`` for a job and its init steps, ``<replica>.log`` for each replica
of a distributed op (`runtime._replicas`). A DAG's ops and a sweep's trials are runs of their
own, with their own directories; the caller names them (``children``: op path -> run uuid).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from polyaxon_prefect.runtime._context import find_run_path
from polyaxon_prefect.runtime._log_lines import LogLine
from polyaxon_prefect.runtime._outcome import LOG_FILE

__all__ = ["LOGS_DIR", "log_files", "read_log_files"]

LOGS_DIR = "logs"


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
    """Every line the run at ``run_path`` kept, then each child's (``children``: op path ->
    run uuid, in the order given; one whose directory is gone has no lines); a replica's lines
    prefixed ``[worker-1] `` as they are in Prefect's logs."""
    lines: list[LogLine] = []
    for replica, path in log_files(run_path):
        lines += _lines(path, replica, None)
    for op, uuid in (children or {}).items():
        child = find_run_path(uuid, artifacts_root)
        if child is None:
            continue
        for replica, path in log_files(child):
            lines += _lines(path, replica, op)
    return lines
