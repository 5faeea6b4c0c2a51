"""A live table of DAG op statuses on the terminal, for ``polyaxon-prefect run``.

On a terminal (without ``--json``) the runners' reports go to one block redrawn in place
(`live_block`, drawn by `_live_block`: op tables, a sweep's and a job's progress bars); what
follows describes the plain rows used elsewhere (``--live`` on a pipe, ``--json``).

The DAG scheduler reports every status change to `notify`; nothing is shown unless a table is
installed with `live_table` (the CLI does it when stderr is a terminal, or with ``--live``).
The table goes to stderr, so ``--json`` keeps stdout to one JSON object. Prefect's own log lines
share the terminal, so rows are appended (one per change, aligned as a table) rather than
redrawn in place, and the whole table is printed again when the DAG ends. An op served from the
op cache says so on its row (``train  succeeded (cached from run <uuid>)``): its outputs are an
earlier run's, and nothing ran.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING

from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from polyaxon_prefect.prefect.watch._live_block import LiveBlock
    from polyaxon_prefect.search import JobProgress, SweepProgress

__all__ = [
    "LiveTable",
    "finish",
    "live_block",
    "live_table",
    "notify",
    "notify_job",
    "notify_sweep",
    "notify_waiting",
    "start",
]

_COLORS = {
    Status.SUCCEEDED: "32",
    Status.FAILED: "31",
    Status.UPSTREAM_FAILED: "31",
    Status.STOPPED: "33",
    Status.SKIPPED: "36",
    Status.RUNNING: "34",
}


class LiveTable:
    """Rows of ``dag | op | status | elapsed``; one row per change, a summary at the end."""

    def __init__(self, stream: IO[str] | None = None, *, color: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.color = isatty() if color is None else color
        self.lock = threading.Lock()
        self.width = 12
        self.started: dict[tuple[str, str], float] = {}
        self.statuses: dict[str, dict[str, Status]] = {}
        self.notes: dict[tuple[str, str], str] = {}
        self.t0 = time.monotonic()

    def _status(self, status: Status) -> str:
        text = f"{status:<15}"
        code = _COLORS.get(status)
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and code else text

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, dag: str, ops: Sequence[str]) -> None:
        with self.lock:
            self.statuses[dag] = dict.fromkeys(ops, Status.CREATED)
            self.width = max([self.width, *(len(o) for o in ops)])
            self._write(f"{'op':<{self.width}}  {'status':<15}  time    (dag {dag})")

    def update(
        self,
        dag: str,
        op: str,
        status: Status,
        cached_from: str | None = None,
        reused_from: str | None = None,
        waiting: str = "",
    ) -> None:
        with self.lock:
            self.statuses.setdefault(dag, {})[op] = status
            note = _cache_note(cached_from) or _reuse_note(reused_from)
            if waiting:
                self._write(f"{op:<{self.width}}  {self._row_status(status, f'({waiting})')}")
                return
            if note:
                self.notes[(dag, op)] = note
            now = time.monotonic()
            if status == Status.RUNNING:
                self.started[(dag, op)] = now
                elapsed = ""
            else:
                began = self.started.pop((dag, op), None)
                elapsed = f"{now - began:6.1f}s" if began is not None else ""
            self._write(f"{op:<{self.width}}  {self._row_status(status, note)}  {elapsed}")

    def finish(self, dag: str, status: Status) -> None:
        with self.lock:
            ops = self.statuses.pop(dag, {})
            self._write(f"dag {dag}: {self._status(status).rstrip()}")
            for op, op_status in ops.items():
                note = self.notes.pop((dag, op), "")
                self._write(f"  {op:<{self.width}}  {self._row_status(op_status, note)}")

    def sweep(self, name: str, progress: SweepProgress) -> None:
        """Nothing: in plain rows a sweep's log line says how far it is (`trial_line`)."""

    def job(self, name: str, progress: JobProgress) -> None:
        """Nothing: plain rows show statuses; ``get --json`` and the UI show a job's progress."""

    def _row_status(self, status: Status, note: str) -> str:
        """The status cell, with the cache note after the status word when there is one."""
        if not note:
            return self._status(status)
        return self._status(status).rstrip() + f" {note}"


_TABLES: list[LiveTable | LiveBlock] = []


def start(dag: str, ops: Sequence[str]) -> None:
    for table in list(_TABLES):
        table.start(dag, ops)


def notify(
    dag: str,
    op: str,
    status: Status,
    cached_from: str | None = None,
    *,
    reused_from: str | None = None,
) -> None:
    """Report that op ``op`` of DAG ``dag`` is now ``status`` (no-op without a table);
    ``cached_from``: the run whose outputs a cache hit reused; ``reused_from``: the earlier
    run a restarted DAG took this op's results from (``restart --from``)."""
    for table in list(_TABLES):
        table.update(dag, op, status, cached_from, reused_from)


def notify_waiting(op: str, reason: str) -> None:
    """Op ``op`` (of whichever DAG on the table has it) waits for GPUs: ``queued`` with
    ``reason``; an empty ``reason``: it has them, ``running`` again."""
    for table in list(_TABLES):
        for dag, ops in list(table.statuses.items()):
            if op in ops:
                table.update(dag, op, Status.QUEUED if reason else Status.RUNNING, waiting=reason)


def _cache_note(cached_from: str | None) -> str:
    return f"(cached from run {cached_from})" if cached_from else ""


def _reuse_note(reused_from: str | None) -> str:
    return f"(reused from run {reused_from})" if reused_from else ""


def finish(dag: str, status: Status) -> None:
    for table in list(_TABLES):
        table.finish(dag, status)


def notify_sweep(name: str, progress: SweepProgress, *, final: bool = False) -> None:
    """The sweep of op ``name`` is this far (`SweepProgress`; ``final``: it is over)."""
    del final  # the last progress is drawn like any other: the block keeps it when it ends
    for table in list(_TABLES):
        table.sweep(name, progress)


def notify_job(name: str, progress: JobProgress) -> None:
    """Job ``name`` said it is this far (its ``log_progress``)."""
    for table in list(_TABLES):
        table.job(name, progress)


@contextlib.contextmanager
def live_block(stream: IO[str]) -> Iterator[LiveBlock]:
    """One block redrawn in place on the terminal ``stream`` (`LiveBlock`) while the runs of
    the block go on: DAG op tables, sweep and job progress bars."""
    from polyaxon_prefect.prefect.watch._live_block import LiveBlock

    block = LiveBlock(stream)
    with block:
        _TABLES.append(block)
        try:
            yield block
        finally:
            _TABLES.remove(block)


@contextlib.contextmanager
def live_table(stream: IO[str] | None = None) -> Iterator[LiveTable]:
    """Show op statuses of the DAGs run inside the block on ``stream`` (default stderr)."""
    table = LiveTable(stream)
    _TABLES.append(table)
    try:
        yield table
    finally:
        _TABLES.remove(table)
