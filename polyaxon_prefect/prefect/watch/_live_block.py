"""The live block of ``polyaxon-prefect run`` on a terminal: one block redrawn in place.

A DAG shows its op table (op, status, time: ticking while the op runs), a sweep a progress
bar with its count, running and failed trials, the best so far and the ETA, a job that calls
``log_progress`` its bar and ETA. Rich's `Live` draws it on stderr; everything else written
to the terminal meanwhile (Prefect's log lines, the job's own lines, ``print``) is printed
above it: Prefect's console handlers print through the block's console while it is shown
(`_AboveBlock`), and Rich redirects ``sys.stdout``/``sys.stderr`` to print above it.

Used only where stderr is a terminal and ``--json`` is off (`prefect._cli`); elsewhere the
plain rows of `_live.LiveTable` and the sweep's log lines say the same.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from polyaxon_prefect.search import JobProgress, SweepProgress, format_eta
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from rich.console import Console, Group
    from rich.table import Table

__all__ = ["LiveBlock"]

_STYLES = {
    Status.SUCCEEDED: "green",
    Status.FAILED: "red",
    Status.UPSTREAM_FAILED: "red",
    Status.STOPPED: "yellow",
    Status.SKIPPED: "cyan",
    Status.RUNNING: "blue",
}
_BAR_WIDTH = 30


class _Op:
    def __init__(self) -> None:
        self.status: Status = Status.CREATED
        self.note = ""
        self.started: float | None = None
        self.elapsed: float | None = None


class LiveBlock:
    """The block, with the same calls as `_live.LiveTable` plus `sweep` and `job`."""

    def __init__(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.live import Live

        self.lock = threading.Lock()
        self.dags: dict[str, dict[str, _Op]] = {}
        self.dag_status: dict[str, Status] = {}
        self.sweeps: dict[str, SweepProgress] = {}
        self.jobs: dict[str, JobProgress] = {}
        self.console = Console(file=stream, stderr=True)
        self.live = Live(
            console=self.console,
            get_renderable=self.render,
            refresh_per_second=4,
            transient=False,
        )
        self.adopted: list[tuple[Any, Any]] = []
        """(handler, its console before) of each Prefect console handler printing above us."""

    # -- lifetime ---------------------------------------------------------------------------

    def __enter__(self) -> LiveBlock:
        self.live.start()
        self._adopt()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()
        for handler, console in self.adopted:
            handler.console = console
        self.adopted.clear()

    def _adopt(self) -> None:
        """Prefect's console handlers print above the block (`_AboveBlock`): they write to the
        stderr of when Prefect set up logging, before the block, where their lines would be
        drawn over. A handler made later is adopted at the next change."""
        from prefect.logging.handlers import PrefectConsoleHandler

        loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        for logger in loggers:
            for handler in getattr(logger, "handlers", ()):
                if isinstance(handler, PrefectConsoleHandler) and not isinstance(
                    handler.console, _AboveBlock
                ):
                    self.adopted.append((handler, handler.console))
                    handler.console = _AboveBlock(handler.console, self.console)  # type: ignore[assignment]

    # -- what the runners report ------------------------------------------------------------

    @property
    def statuses(self) -> dict[str, dict[str, Status]]:
        """Each DAG's op statuses (`_live.notify_waiting` finds an op's DAG in them)."""
        with self.lock:
            return {dag: {op: r.status for op, r in ops.items()} for dag, ops in self.dags.items()}

    def start(self, dag: str, ops: Sequence[str]) -> None:
        with self.lock:
            self.dags[dag] = {op: _Op() for op in ops}
            self.dag_status[dag] = Status.RUNNING
        self._changed()

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
            row = self.dags.setdefault(dag, {}).setdefault(op, _Op())
            now = time.monotonic()
            if status == Status.RUNNING and row.started is None:
                row.started = now
            elif status not in (Status.RUNNING, Status.QUEUED) and row.started is not None:
                row.elapsed = now - row.started
            row.status = status
            if cached_from:
                row.note = f"cached from run {cached_from}"
            elif reused_from:
                row.note = f"reused from run {reused_from}"
            else:
                row.note = waiting
        self._changed()

    def finish(self, dag: str, status: Status) -> None:
        with self.lock:
            self.dag_status[dag] = status
        self._changed()

    def sweep(self, name: str, progress: SweepProgress) -> None:
        with self.lock:
            self.sweeps[name] = progress
        self._changed()

    def job(self, name: str, progress: JobProgress) -> None:
        with self.lock:
            self.jobs[name] = progress
        self._changed()

    def _changed(self) -> None:
        self._adopt()
        self.live.refresh()

    # -- drawing ----------------------------------------------------------------------------

    def render(self) -> Group:
        from rich.console import Group

        with self.lock:
            parts = [self._dag(dag, ops) for dag, ops in self.dags.items()]
            parts += [self._sweep(name, p) for name, p in self.sweeps.items()]
            parts += [self._job(name, p) for name, p in self.jobs.items()]
        return Group(*parts)

    def _dag(self, dag: str, ops: dict[str, _Op]) -> Table:
        from rich.table import Table
        from rich.text import Text

        status = self.dag_status.get(dag, Status.RUNNING)
        title = Text(f"dag {dag}: {status}")
        table = Table(title=title, title_justify="left", box=None)
        table.add_column("op")
        table.add_column("status")
        table.add_column("time", justify="right")
        now = time.monotonic()
        for op, row in ops.items():
            seconds = row.elapsed
            if seconds is None and row.started is not None and row.status == Status.RUNNING:
                seconds = now - row.started
            shown = Text(str(row.status), style=_STYLES.get(row.status, ""))
            if row.note:
                shown.append(f" ({row.note})")
            table.add_row(Text(op), shown, f"{seconds:.1f}s" if seconds is not None else "")
        return table

    def _sweep(self, name: str, progress: SweepProgress) -> Table:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 1))
        total = float(progress.total or max(progress.done + progress.running, 1))
        grid.add_row(
            Text(f"sweep {name}"),
            ProgressBar(total=total, completed=float(progress.done), width=_BAR_WIDTH),
            progress.count(),
            Text(_details(progress)),
        )
        return grid

    def _job(self, name: str, progress: JobProgress) -> Table:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 1))
        eta = f"eta {format_eta(progress.eta_seconds)}" if progress.fraction < 1 else ""
        grid.add_row(
            Text(f"job {name}"),
            ProgressBar(total=1.0, completed=progress.fraction, width=_BAR_WIDTH),
            f"{progress.fraction:.0%}",
            eta,
        )
        return grid


class _AboveBlock:
    """A Prefect console handler's console while the block is shown: a line is rendered as
    its own console renders it (Prefect's colours), then printed by the block's console,
    which puts it above the block instead of drawing over it."""

    def __init__(self, own: Console, block: Console) -> None:
        self.own = own
        self.block = block

    def print(self, *objects: object, **kwargs: Any) -> None:
        from rich.text import Text

        with self.own.capture() as captured:
            self.own.print(*objects, **kwargs)
        self.block.print(Text.from_ansi(captured.get().rstrip("\n")), soft_wrap=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)


def _details(progress: SweepProgress) -> str:
    """``2 running  1 failed  best loss 0.29 (trial 4)  eta 1m20s``."""
    parts = [f"{progress.running} running"] if progress.running else []
    parts += [f"{progress.failed} failed"] if progress.failed else []
    parts += [progress.best_words()] if progress.best is not None else []
    if progress.going:
        parts.append(f"eta {format_eta(progress.eta_seconds)}")
    return "  ".join(parts)
