"""The run session of this process: nothing a run starts may outlive the process that started it.

A session is created on first use in a process (the CLI creates it first thing). It puts
``POLYAXON_PREFECT_SESSION=<id>`` into this process's environment, so every process a run
starts (the local Prefect server, jobs, their children, replicas) inherits it, and starts the
reaper (`polyaxon_prefect.runtime.session._reaper`), which stops all of them and marks the session's
flow runs crashed when this process ends without doing so itself, SIGKILL included.

Should the reaper die with the process (a machine-wide OOM kill, ``kill -9`` of both), a journal
under ``<artifacts root>/.sessions/`` still names the session's flow runs: the next run of the
CLI on the same Prefect database marks those of dead sessions crashed (`recover_stale_sessions`).

The session also carries the stop request of an interrupted run (`request_stop`): the signal
handler of the CLI sets it, and every wait loop of a run (a job's process, a DAG's scheduler,
a sweep's trials) treats it as a cancellation, so an interrupted run ends ``stopped`` with its
processes stopped and its flow runs final.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import IO

from polyaxon_prefect.client.server._local_server import pid_alive
from polyaxon_prefect.client.server._session_journals import (
    dead_session_of,
    home_database_target,
    journal_dir,
    read_journal,
)
from polyaxon_prefect.exceptions import write_failure
from polyaxon_prefect.runtime.session._reaper import SESSION_ENV, mark_crashed, settle

__all__ = [
    "SESSION_ENV",
    "Session",
    "current_session",
    "home_database_target",
    "pid_alive",
    "recover_stale_sessions",
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
        self._journal: Path | None = None
        self._target: str | None = None
        self._journal_failed = False
        self.closed = False
        """Ended (`close`): its reaper is gone; `current_session` makes this process a new one."""
        self.live_groups: set[int] = set()
        """The job process groups running now (what a run waits for when its server is gone)."""
        self.flow_runs: list[str] = []
        """The flow runs this process started, in order (what ``run -w`` follows)."""
        self._start_reaper()
        atexit.register(self.close)

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
        self.live_groups.add(pgid)
        self._send(f"group {pgid}")

    def untrack_group(self, pgid: int) -> None:
        self.live_groups.discard(pgid)
        self._send(f"ungroup {pgid}")

    def track_server(self, pgid: int, api_url: str) -> None:
        """A local Prefect server: stopped last, after the session's runs are marked crashed."""
        self._send(f"server {pgid}")
        self._send(f"api {api_url}")

    def track_containers(self, cli: str) -> None:
        """A container CLI (docker, podman) whose containers labelled with this session the
        reaper removes if this process dies."""
        self._send(f"containers {cli}")

    def track_api(self, api_url: str) -> None:
        self._send(f"api {api_url}")

    def set_target(self, target: str) -> None:
        """Which Prefect database this session's flow runs live in (see `database_target`)."""
        self._target = target

    def track_flow_run(self, flow_run_id: object) -> None:
        """A flow run to mark crashed if this process dies before it is final."""
        self.flow_runs.append(str(flow_run_id))
        self._send(f"flow-run {flow_run_id}")
        self._write_journal(f"flow-run {flow_run_id}")

    def flow_run_final(self, flow_run_id: object) -> None:
        """A tracked flow run is final on the server (Prefect set its final state): the
        reaper leaves it alone."""
        if str(flow_run_id) in self.flow_runs:
            self._send(f"final {flow_run_id}")

    def settle_later(self, settlement: dict[str, object]) -> None:
        """How a run whose server went away ended (`_reaper.settle`: its flow run's final
        state, its ops' task runs' states, its record artifact), for the next command on a
        server of the same database to write, in place of marking it crashed."""
        self._write_journal("settle " + json.dumps(settlement, separators=(",", ":")))

    def _write_journal(self, line: str) -> None:
        with self._lock:
            try:
                if self._journal is None:
                    directory = journal_dir()
                    directory.mkdir(parents=True, exist_ok=True)
                    self._journal = directory / f"{self.id}.journal"
                    atexit.register(self._remove_journal)
                with self._journal.open("a", encoding="utf-8") as handle:
                    # a new file, or one removed since (this session closed, then used again):
                    # every journal begins with its header, or no command could settle it
                    if handle.tell() == 0:
                        target = self._target or database_target()
                        line = f"pid {self.pid}\ntarget {target}\n{line}"
                    handle.write(line + "\n")
            except OSError as error:  # a second line of defence only: said once, not fatal
                if not self._journal_failed:
                    self._journal_failed = True
                    where = self._journal or journal_dir()
                    print(
                        f"warning: {write_failure(where, error)}: should this process and its "
                        "reaper both be killed, its flow runs would not be marked crashed",
                        file=sys.stderr,
                        flush=True,
                    )

    def _remove_journal(self) -> None:
        # a forked child exiting runs its parent's exit hooks: the journal is the parent's
        if self._journal is not None and os.getpid() == self.pid:
            with contextlib.suppress(OSError):
                self._journal.unlink()

    def close(self) -> None:
        """End the session normally: the reaper checks once more (nothing is left to stop on
        a clean end, so it takes milliseconds), then exits; this waits briefly for that."""
        if os.getpid() != self.pid:  # a forked child holds a copy of the pipe, not the session
            return
        self.closed = True
        with self._lock:
            pipe, self._pipe = self._pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()
        self._remove_journal()
        if self._reaper is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._reaper.wait(timeout=2)


def database_target() -> str:
    """The Prefect database a process talks to: the API URL the user chose, else the local
    database of ``PREFECT_HOME`` (a local server gets a new port on every run)."""
    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        return chosen.rstrip("/")
    return home_database_target()


def recover_stale_sessions(api_url: str, target: str) -> int:
    """Mark crashed the unfinished flow runs of dead sessions on the same database ``target``
    (their process and reaper are gone), or, for a run that ended while its server was gone,
    write how it ended (`Session.settle_later`); returns how many journals were settled."""
    settled = 0
    directory = journal_dir()
    if not directory.is_dir():
        return 0
    for path in directory.glob("*.journal"):
        journal = read_journal(path)
        if journal is None or not dead_session_of(journal, target):
            continue
        for settlement in journal.settlements:  # first: what is settled is not crashed
            with contextlib.suppress(Exception):
                settle(api_url.rstrip("/"), json.loads(settlement))
        with contextlib.suppress(Exception):
            mark_crashed(api_url.rstrip("/"), list(journal.flow_runs[-200:]))
        with contextlib.suppress(OSError):
            path.unlink()
        settled += 1
    return settled


_SESSION: Session | None = None
_SESSION_LOCK = threading.Lock()
_STOP = threading.Event()
_STOP_REASON: list[str] = []


def current_session() -> Session:
    """This process's session, created (with its reaper) on first use, and anew after a fork or
    once it was closed (a second ``run`` in one process: `cli.main` called in-process)."""
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None or _SESSION.pid != os.getpid() or _SESSION.closed:
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
