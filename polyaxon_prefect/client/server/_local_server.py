"""The background server's files in the Prefect home (its record, its clients' leases) and the
proof that a record's pid is still that server: standard library only, so the thin client
reads them before Prefect loads, and the one definition `prefect.server._background_server`
(which starts, stops and writes them) uses. The sessions' journals are `_session_journals`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LEASES_DIR",
    "RECORD_FILE",
    "SERVER_MODULE",
    "STOPPED_EXIT",
    "BackgroundServer",
    "health",
    "healthy",
    "hold_lease",
    "is_our_server",
    "leases_dir",
    "pid_alive",
    "prefect_home",
    "read_record",
    "read_server",
    "record_path",
    "running_server",
    "server_process",
    "start_ticks",
]

RECORD_FILE = "polyaxon-prefect-server.json"
"""The record of the background server, in the Prefect home."""
LEASES_DIR = "polyaxon-prefect-server.clients"
SERVER_MODULE = b"polyaxon_prefect.prefect.server._server_process"
"""What the background server's command line runs (`_background_server._spawn`)."""
STOPPED_EXIT = 3
"""How ``server status`` exits when no server runs (as ``systemctl status`` does)."""
_HELD: set[Path] = set()


@dataclass(frozen=True)
class BackgroundServer:
    """The record of the background server (what `_background_server._spawn` writes)."""

    pid: int
    url: str
    """The server's address (the UI is there; the API under ``/api``)."""
    log: str
    database: str
    idle_timeout: float = 0.0
    """Seconds without API use after which it stops itself; 0 for never."""
    started: int | None = None
    """Its process's start time (`start_ticks`), so a reused pid is never taken for it."""

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def record_path() -> Path:
    return prefect_home() / RECORD_FILE


def leases_dir() -> Path:
    """Where each process that uses the background server leaves a file named after its pid:
    the server never stops itself while one of them lives (`hold_lease`)."""
    return prefect_home() / LEASES_DIR


def read_record() -> dict[str, Any] | None:
    """The background server's record as written, None when there is none to read."""
    try:
        data = json.loads(record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def hold_lease() -> None:
    """Keep the background server up while this process lives (the file goes at exit; a
    process killed before that leaves a file whose pid is dead, which the server ignores)."""
    path = leases_dir() / str(os.getpid())
    if path in _HELD:
        return
    _HELD.add(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:  # the API use it makes still counts
        return
    atexit.register(lambda: path.unlink(missing_ok=True))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22), or
    None where that cannot be read: with the pid, it names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def server_process(pid: int, started: int | None) -> bool | None:
    """Whether ``pid`` is still the background server a record names (a pid is reused after a
    reboot or a crash: an unrelated process must never be stopped or asked). Proven only by both
    the start time the record keeps and our server module on the pid's command line: a record
    without its start time (older versions wrote none) proves nothing, whatever runs under that
    pid. None where ``/proc`` is missing (the caller asks the URL instead)."""
    if not Path("/proc/self").exists():
        return None
    if started is None or not pid_alive(pid) or start_ticks(pid) != started:
        return False
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return SERVER_MODULE in command.split(b"\0")


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    """Whether a Prefect API answers its health check at ``api_url`` (soon: a server that hangs
    is not one to wait on)."""
    return health(api_url, timeout) == "answers"


def health(api_url: str, timeout: float = 2.0) -> Literal["answers", "silent", "unreachable"]:
    """How the Prefect API at ``api_url`` takes its health check: it ``answers``; it is
    ``silent`` (the connection was made, no answer came within ``timeout``: a server busy on a
    loaded machine looks so, and so does a hung one); or it is ``unreachable`` (refused, reset,
    an error status, not an address: nothing serves there)."""
    import http.client  # here: `check` and every other command import this module
    import urllib.parse

    parts = urllib.parse.urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "unreachable"
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        connection = kind(parts.hostname, parts.port, timeout=timeout)
        try:
            connection.request("GET", parts.path.rstrip("/") + "/health")
            return "answers" if connection.getresponse().status == 200 else "unreachable"
        finally:
            connection.close()
    except TimeoutError:  # before OSError, its base
        return "silent"
    except (OSError, http.client.HTTPException, ValueError):
        return "unreachable"


def read_server() -> BackgroundServer | None:
    """The record as a `BackgroundServer`, None when there is none or it is malformed."""
    data = read_record()
    try:
        return BackgroundServer(**data) if data is not None else None
    except TypeError:
        return None


def is_our_server(record: BackgroundServer) -> bool:
    """Whether the record's pid is still the server it names (`server_process`); where
    ``/proc`` is missing, whether its URL answers as a Prefect server."""
    ours = server_process(record.pid, record.started)
    return healthy(record.api_url) if ours is None else ours


def running_server() -> BackgroundServer | None:
    """The background server of this Prefect home when it is up; a record left by a server
    that died is removed."""
    record = read_server()
    if record is None:
        return None
    if not pid_alive(record.pid) or not is_our_server(record):
        with contextlib.suppress(OSError):
            record_path().unlink()
        return None
    # proven ours (its pid runs the server module since the recorded start), a server that
    # is only slow to answer on a loaded machine is still this home's: taking it for gone
    # would start a second server on the same database
    return record if health(record.api_url) != "unreachable" else None
