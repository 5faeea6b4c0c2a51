"""A run's log lines as ``logs`` shows them, wherever they were read from (Prefect's logs API or
the files a run keeps): which op and replica each line is of, the selection ``--op``,
``--replica`` and ``--tail`` make, and the line printed. Pure: no I/O, no Prefect (one code
path of the thin client's and the flow layer's ``logs``; `polyaxon_prefect.runtime` re-exports
it for the files' reader).

A line's ``op`` is its path below the run read: ``train`` (a DAG op), ``nested/a`` (op ``a`` of
the nested DAG ``nested``), ``tune/trial-3`` (trial 3 of the sweep op ``tune``), ``trial-3``
(a sweep's own trial); None for the run's own lines. Its ``replica`` is the ``[worker-1] ``
prefix a distributed op's lines carry (`runtime._replicas` adds it to what goes to Prefect; the
files keep each replica's lines in ``logs/<replica>.log``, without it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "LogLine",
    "exit_code",
    "line_record",
    "replica_of",
    "select_lines",
    "shown_line",
]

_REPLICA = re.compile(r"^\[([A-Za-z]+-\d+)\] ")
"""The prefix of a replica's line: ``[master-0] ``, ``[worker-1] `` (`Replica.name`)."""


@dataclass(frozen=True)
class LogLine:
    """One line of a run: its text, when it was logged (None: a file line, which has no
    time of its own), its level (``logging``'s numbers), and the op it is of."""

    message: str
    timestamp: datetime | None = None
    level: int = 20
    op: str | None = None

    @property
    def replica(self) -> str | None:
        return replica_of(self.message)


def replica_of(message: str) -> str | None:
    """The replica a line is of (``worker-1`` for ``[worker-1] ...``), None for any other."""
    found = _REPLICA.match(message)
    return found.group(1) if found else None


def _under(op: str | None, wanted: str) -> bool:
    """Whether a line of ``op`` belongs to the op ``wanted`` names (itself or what it runs:
    ``--op nested`` has ``nested/a``'s lines too)."""
    return op is not None and (op == wanted or op.startswith(wanted + "/"))


def select_lines(
    lines: Iterable[LogLine],
    *,
    op: str | None = None,
    replica: str | None = None,
    tail: int | None = None,
) -> list[LogLine]:
    """The lines of op ``op`` (and what it runs) and of replica ``replica``, the last ``tail``
    of them (all when None)."""
    chosen = [
        line
        for line in lines
        if (op is None or _under(line.op, op)) and (replica is None or line.replica == replica)
    ]
    if tail is not None:
        chosen = chosen[-tail:] if tail > 0 else []
    return chosen


def shown_line(line: LogLine, *, replica: str | None = None) -> str:
    """The line as printed: ``[op] `` before an op's line; the replica prefix dropped when one
    replica was asked for (its lines alone, as its own process printed them)."""
    message = line.message
    if replica is not None and line.replica == replica:
        message = message[len(replica) + 3 :]
    return f"[{line.op}] {message}" if line.op else message


def line_record(line: LogLine) -> dict[str, Any]:
    """A line under ``--json`` (one JSON object a line): what a script filters on."""
    return {
        "timestamp": line.timestamp.isoformat() if line.timestamp is not None else None,
        "level": line.level,
        "op": line.op,
        "replica": line.replica,
        "message": line.message,
    }


def exit_code(status: str) -> int:
    """How ``logs -f`` and ``statuses -w`` exit once the run ended: as ``run`` does, 0 when it
    succeeded, 1 for any other end (failed, stopped, skipped, upstream_failed)."""
    return 0 if status == "succeeded" else 1
