"""The run session of this process: nothing a run starts may outlive the process that started it.

A session is created on first use in a process (the CLI creates it first thing). It puts
``POLYAXON_PREFECT_SESSION=<id>`` into this process's environment, so every process a run
starts (the local Prefect server, jobs, their children, replicas) inherits it, and starts the
reaper (`polyaxon_prefect.runtime._reaper`), which stops all of them and marks the session's
flow runs crashed when this process ends without doing so itself, SIGKILL included.

The session also carries the stop request of an interrupted run (`request_stop`): the signal
handler of the CLI sets it, and every wait loop of a run (a job's process, a DAG's scheduler,
a sweep's trials) treats it as a cancellation, so an interrupted run ends ``stopped`` with its
processes stopped and its flow runs final.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import IO

from polyaxon_prefect.runtime._reaper import SESSION_ENV

__all__ = [
    "SESSION_ENV",
    "Session",
    "current_session",
    "request_stop",
    "stop_reason",
    "stop_requested",
]

_REAPER_SCRIPT = Path(__file__).with_name("_reaper.py")


class Session:
    """One process's session: its id, its reaper, and what the reaper must clean up."""

    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._pipe: IO[str] | None = None
        self._reaper: subprocess.Popen[str] | None = None
        os.environ[SESSION_ENV] = self.id
        self._start_reaper()

    def _start_reaper(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != SESSION_ENV}
        try:
            self._reaper = subprocess.Popen(
                [sys.executable, "-I", str(_REAPER_SCRIPT), self.id],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                text=True,
                start_new_session=True,  # out of reach of the terminal's Ctrl-C
                close_fds=True,
            )
        except OSError:  # no reaper: runs still clean up on every end but a hard kill
            self._reaper = None
            return
        self._pipe = self._reaper.stdin

    def _send(self, line: str) -> None:
        with self._lock:
            if self._pipe is None:
                return
            try:
                self._pipe.write(line + "\n")
                self._pipe.flush()
            except (OSError, ValueError):
                self._pipe = None

    def track_group(self, pgid: int) -> None:
        """A process group to stop if this process dies while it runs."""
        self._send(f"group {pgid}")

    def untrack_group(self, pgid: int) -> None:
        self._send(f"ungroup {pgid}")

    def track_server(self, pgid: int, api_url: str) -> None:
        """A local Prefect server: stopped last, after the session's runs are marked crashed."""
        self._send(f"server {pgid}")
        self._send(f"api {api_url}")

    def track_api(self, api_url: str) -> None:
        self._send(f"api {api_url}")

    def track_flow_run(self, flow_run_id: object) -> None:
        """A flow run to mark crashed if this process dies before it is final."""
        self._send(f"flow-run {flow_run_id}")

    def close(self) -> None:
        """End the session normally: the reaper checks once more, then exits."""
        with self._lock:
            pipe, self._pipe = self._pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


_SESSION: Session | None = None
_SESSION_LOCK = threading.Lock()
_STOP = threading.Event()
_STOP_REASON: list[str] = []


def current_session() -> Session:
    """This process's session, created (with its reaper) on first use, and anew after a fork."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None or _SESSION.pid != os.getpid():
            _SESSION = Session()
        return _SESSION


def request_stop(reason: str) -> None:
    """Stop every run of this process: running processes are stopped, nothing new starts."""
    if not _STOP.is_set():
        _STOP_REASON.append(reason)
        _STOP.set()


def stop_requested() -> bool:
    return _STOP.is_set()


def stop_reason() -> str:
    return _STOP_REASON[0] if _STOP_REASON else ""


def reset_stop() -> None:
    """Clear a stop request (for a process that runs again after an interrupted run)."""
    _STOP.clear()
    _STOP_REASON.clear()
