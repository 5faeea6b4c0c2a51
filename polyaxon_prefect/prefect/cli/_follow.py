"""``-w`` and ``-l`` of ``run`` (`_run_flags.follow`): the status lines of every flow run this
command starts, and the job's own output lines instead of Prefect's console echo of them."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["follow_run"]

_POLL_SECONDS = 0.5


class _JobLines(logging.Handler):
    """Writes the job's own lines (records marked `JOB_LINE`) as they were printed, and keeps
    Prefect's console from echoing them a second time (they still reach the API: the UI and
    ``logs`` keep them)."""

    def __init__(self, stream: IO[str], prefixed: bool) -> None:
        super().__init__(logging.DEBUG)
        from polyaxon_prefect.prefect._job_flow import JOB_LINE

        self.mark = JOB_LINE
        self.stream = stream
        self.prefixed = prefixed
        self.quieted: list[logging.Handler] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Also the filter set on the console handlers: True for anything but a job line."""
        return getattr(record, self.mark, None) is None

    def emit(self, record: logging.LogRecord) -> None:
        if self.filter(record):
            return
        self._quiet_console(record.name)
        who = getattr(record, "task_run_name", None) or getattr(record, "flow_run_name", None)
        line = record.getMessage()
        try:
            self.stream.write(f"[{who}] {line}\n" if self.prefixed and who else line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def handle(self, record: logging.LogRecord) -> bool:
        self.emit(record)  # `filter` is what console handlers use; this handler sees all
        return True

    def _quiet_console(self, name: str) -> None:
        """Prefect sets up its console handler (on the root logger) when a run starts, so it
        is looked for at the first job line, above the logger that line came from."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            for handler in logger.handlers:
                if (
                    isinstance(handler, logging.StreamHandler)
                    and handler is not self
                    and handler not in self.quieted
                ):
                    handler.addFilter(self)
                    self.quieted.append(handler)
            logger = logger.parent if logger.propagate else None

    def restore(self) -> None:
        for handler in self.quieted:
            handler.removeFilter(self)
        self.quieted.clear()


class _StatusWatch:
    """Polls the flow runs of this process (`Session.flow_runs`) and says each change."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.seen: dict[str, str] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="run-watch", daemon=True)

    def _loop(self) -> None:
        while not self.done.wait(_POLL_SECONDS):
            self.poll()
        self.poll()

    def poll(self) -> None:
        from polyaxon_prefect.runtime.session._session import current_session

        ids = list(dict.fromkeys([*current_session().flow_runs, *self.seen]))
        if not ids:
            return
        try:
            runs = self._read(ids)
        except Exception:  # the server is slow or gone: the run's own watch says so
            return
        from polyaxon_prefect.prefect._states import polyaxon_status

        for run in runs:
            if run.state is None:
                continue
            status = polyaxon_status(run.state)
            if self.seen.get(str(run.id)) == status:
                continue
            self.seen[str(run.id)] = status
            stamp = time.strftime("%H:%M:%S")
            try:
                self.stream.write(f"{stamp} {run.name}: {status}\n")
                self.stream.flush()
            except (OSError, ValueError):
                return

    @staticmethod
    def _read(ids: list[str]) -> list[Any]:
        """The flow runs ``ids`` and their children (a sweep's trials, a DAG's nested runs,
        which this process records through the API rather than runs as flows)."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import (
            FlowRunFilter,
            FlowRunFilterId,
            FlowRunFilterParentFlowRunId,
        )
        from prefect.client.schemas.sorting import FlowRunSort

        with get_client(sync_client=True) as client:
            found = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids))
            ) + client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=ids)
                ),
                sort=FlowRunSort.START_TIME_ASC,
            )
        unique = {str(run.id): run for run in found}
        # in the order the states were entered: a trial's end before its sweep's
        return sorted(
            unique.values(), key=lambda run: run.state.timestamp if run.state else run.created
        )


@contextmanager
def follow_run(args: argparse.Namespace, *, prefixed: bool) -> Iterator[None]:
    """``-w`` and ``-l`` around the run (nothing without them). ``prefixed``: the run has
    several ops or trials, so each job line says whose it is."""
    watch = _StatusWatch(sys.stderr) if args.watch else None
    handler = None
    loggers = [logging.getLogger(name) for name in ("prefect.flow_runs", "prefect.task_runs")]
    if args.log:
        handler = _JobLines(sys.stderr if args.json else sys.stdout, prefixed)
        for logger in loggers:
            logger.addHandler(handler)
    if watch is not None:
        watch.thread.start()
    try:
        yield
    finally:
        if watch is not None:
            watch.done.set()
            watch.thread.join(5)
        if handler is not None:
            for logger in loggers:
                logger.removeHandler(handler)
            handler.restore()
