"""The CLI's local Prefect server: Prefect's ephemeral server, started the way a run needs it.

Prefect starts its ephemeral server itself when no ``PREFECT_API_URL`` is set, but three things
about that start break a command-line run, so the CLI starts the same server (the same
``uvicorn`` command and settings) itself:

- **Its own session.** Prefect's server shares the CLI's process group, so the terminal's
  Ctrl-C killed it while the run was still finishing its flow runs (minutes of connection
  retries, runs left "Running"). Here it is stopped after the run's clean-up, and the session's
  reaper stops it if the CLI is killed.
- **Time for a first start.** On a new ``PREFECT_HOME`` the server builds its SQLite database
  first; on a busy small machine that can take longer than Prefect's startup timeout. Here a
  first start says so on stderr and gets ``POLYAXON_PREFECT_SERVER_STARTUP_TIMEOUT`` seconds
  (default 300), and first starts of concurrent runs on one new home wait for each other (a
  file lock) instead of migrating one database together.
- **One clear error.** If it still cannot start, `ServerStartError` says what to do. A server
  that exits early is seen within a poll, and its own reason (a full disk, a read-only
  database) is the error's first line: uvicorn's exit code 3 means "could not bind" *and*
  "startup failed", so only a log that says the address is in use gets another port.

Standard library only: Prefect is not imported here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from polyaxon_prefect.client.server._local_server import healthy
from polyaxon_prefect.exceptions import PolyaxonPrefectError, write_failure
from polyaxon_prefect.runtime.session._session import current_session

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "ENV_STARTUP_TIMEOUT",
    "LocalServer",
    "ServerStartError",
    "database_problem",
    "file_lock",
    "healthy",
    "home_problem",
    "mark_database_ready",
    "prefect_home",
    "server_failure_reason",
    "start_local_server",
]

ENV_STARTUP_TIMEOUT = "POLYAXON_PREFECT_SERVER_STARTUP_TIMEOUT"
DEFAULT_STARTUP_TIMEOUT = 300.0
_PREFECT_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
_READY_MARKER = ".polyaxon-prefect-db-ready"
_LOCK_FILE = ".polyaxon-prefect-server.lock"
_PORT_IN_USE_EXIT = 3  # uvicorn's exit code when it cannot bind (or its startup failed)
_PORT_IN_USE = re.compile(r"address already in use|errno 98\b|errno 48\b", re.IGNORECASE)
# The reasons a server gives for not creating or opening its database, root causes first.
_REASONS = (
    "database or disk is full",
    "no space left on device",
    "attempt to write a readonly database",
    "readonly database",
    "read-only file system",
    "unable to open database file",
    "disk i/o error",
    "permission denied",
)
_MIN_FREE_BYTES = 1 << 20  # less than this on the home's disk: a first start cannot succeed
_SERVER_ENV = {
    "DO_NOT_TRACK": "1",  # no client telemetry from the server process either
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
}


class ServerStartError(PolyaxonPrefectError):
    """Prefect's local server could not be started."""


@dataclass
class LocalServer:
    """A running local server: its API URL and how to stop it."""

    process: subprocess.Popen[bytes]
    api_url: str
    log_path: Path

    def stop(self, grace: float = 5.0) -> None:
        """Stop the server's process group (SIGTERM, then SIGKILL after ``grace``)."""
        _stop_group(self.process, grace)
        with contextlib.suppress(OSError):
            self.log_path.unlink()


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def _database_file(home: Path) -> Path | None:
    """The SQLite file Prefect uses by default, or None when the user set a database URL."""
    for name in ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        if os.environ.get(name):
            return None
    return home / "prefect.db"


def _startup_timeout() -> float:
    for name in (ENV_STARTUP_TIMEOUT, _PREFECT_TIMEOUT_ENV):
        raw = os.environ.get(name)
        if raw:
            try:
                value = float(raw)
            except ValueError as exc:
                raise ServerStartError(f"${name} must be a number of seconds, got {raw!r}") from exc
            if value > 0:
                return value
    return DEFAULT_STARTUP_TIMEOUT


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prefect_app_dir() -> str:
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        raise ServerStartError("Prefect is not installed in this environment")
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive POSIX ``flock`` on ``path`` while the block runs (elsewhere, none): what
    keeps two commands from starting or migrating one Prefect home together."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def mark_database_ready(home: Path) -> None:
    """Note that the SQLite database of ``home`` is built (a server answered over it)."""
    with contextlib.suppress(OSError):
        (home / _READY_MARKER).touch()


def _is_first_start(home: Path) -> bool:
    database = _database_file(home)
    ready = (home / _READY_MARKER).exists()
    return not ready or (database is not None and not database.exists())


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def server_failure_reason(log_text: str) -> str | None:
    """The server's own reason for exiting, from its log: the line that names a full disk or a
    read-only database (the root cause, not the traceback around it), or None."""
    lowered = log_text.lower()
    for reason in _REASONS:
        at = lowered.find(reason)
        if at >= 0:
            start = lowered.rfind("\n", 0, at) + 1
            end = lowered.find("\n", at)
            line = log_text[start : end if end >= 0 else len(log_text)].strip()
            return line.split("Error) ", 1)[-1].split("Error: ", 1)[-1].strip()
    return None


def home_problem(home: Path) -> str | None:
    """Why a server could not write its database in ``home``, when the disk says so: full (or
    nearly), or read-only. Used when the server's log (itself on that disk) has no reason."""
    existing = next((path for path in (home, *home.parents) if path.exists()), home)
    try:
        stats = os.statvfs(existing)
    except (OSError, AttributeError):
        return None
    if stats.f_flag & getattr(os, "ST_RDONLY", 1):
        return f"{home} is on a read-only file system"
    if stats.f_bavail * stats.f_frsize < _MIN_FREE_BYTES:
        return f"the disk holding {home} is full ({stats.f_bavail * stats.f_frsize} bytes free)"
    return None


def database_problem(home: Path, log_text: str, database_url: str | None = None) -> str | None:
    """Why a server could not create its SQLite database in ``home``: its own reason from its
    log, else what the home's disk says; None when the database is elsewhere (a URL) or no
    reason is known. A temporary server over the same home would fail alike."""
    if database_url or _database_file(home) is None:
        return None
    return server_failure_reason(log_text) or home_problem(home)


_LAST_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)


def database_url_problem(log_text: str) -> str | None:
    """Why a server could not use its database server (``--database-url``), from its log: the
    last exception's own words, one line (a refused connection said plainly), or None."""
    found = _LAST_ERROR.findall(log_text)
    if not found:
        return None
    kind, text = found[-1]
    if kind == "ConnectionRefusedError" or "Connect call failed" in text:
        return f"the connection was refused ({text.strip()}): is the database server running?"
    return f"{kind}: {text.strip()}"


def server_error_cause(error: BaseException, api_url: str | None) -> str | None:
    """Why a local server answered ``500 Internal Server Error``, when its database's disk
    says so (full, read-only): one line for the user instead of the bare status (the server
    cannot write even its log there). None for any other error or server."""
    import urllib.parse

    status = getattr(getattr(error, "response", None), "status_code", None)
    host = urllib.parse.urlsplit(api_url or "").hostname
    if status is None or status < 500 or host not in ("127.0.0.1", "localhost"):
        return None
    home = prefect_home()
    reason = home_problem(home) if _database_file(home) is not None else None
    if reason is None:
        return None
    return (
        f"the Prefect server at {api_url} cannot write its database: {reason}; make room "
        "there, then run again"
    )


def _spawn(port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        _prefect_app_dir(),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    return subprocess.Popen(
        command,
        env={**os.environ, **_SERVER_ENV},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C in the terminal must not reach it
    )


def start_local_server(notify: Callable[[str], None] = lambda _line: None) -> LocalServer:
    """Start Prefect's server on a free loopback port and wait until it answers.

    ``notify`` receives one line for the user when this is the first start on this Prefect
    home (the wait is the database being built). Raises `ServerStartError` with what to do.
    """
    home = prefect_home()
    timeout = _startup_timeout()
    try:
        home.mkdir(parents=True, exist_ok=True)
        server = None
        if _is_first_start(home):
            with file_lock(home / _LOCK_FILE):
                if _is_first_start(home):  # another run may have built it while we waited
                    notify(
                        "preparing Prefect's local database in "
                        f"{home} (first run only; this can take a minute)"
                    )
                    server = _start_and_wait(home, timeout)
                    mark_database_ready(home)
        if server is None:
            # A built database needs no turn: the runs that waited on the first start start
            # their servers together, not one after another under its lock.
            server = _start_and_wait(home, timeout)
    except OSError as error:
        raise ServerStartError(
            f"Prefect's local server cannot start: {write_failure(home, error)}; "
            "free space there or make it writable, or point PREFECT_HOME at another folder"
        ) from error
    return server


def _start_and_wait(home: Path, timeout: float) -> LocalServer:
    """Spawn the server and poll both it and its health until it answers, exits or times out;
    a taken port (said in its log) gets another one."""
    session = current_session()
    fd, log_name = tempfile.mkstemp(prefix="polyaxon-prefect-server-", suffix=".log")
    log_path = Path(log_name)
    started = time.monotonic()
    with os.fdopen(fd, "wb") as log:
        port, log_from = _free_port(), 0
        process = _spawn(port, log)
        api_url = f"http://127.0.0.1:{port}/api"
        session.track_server(process.pid, api_url)
        while not healthy(api_url):
            code = process.poll()
            if code == _PORT_IN_USE_EXIT and _PORT_IN_USE.search(_read_from(log_path, log_from)):
                port, log_from = _free_port(), _size(log_path)
                process = _spawn(port, log)
                api_url = f"http://127.0.0.1:{port}/api"
                session.track_server(process.pid, api_url)
                continue
            elapsed = time.monotonic() - started
            if code is not None or elapsed > timeout:
                _stop_group(process, 2.0)
                raise ServerStartError(_failure(code, elapsed, timeout, home, log_path))
            time.sleep(0.1)
    return LocalServer(process=process, api_url=api_url, log_path=log_path)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _failure(code: int | None, elapsed: float, timeout: float, home: Path, log: Path) -> str:
    reason = server_failure_reason(_read_from(log, 0)) if code is not None else None
    reason = reason or (home_problem(home) if code is not None else None)
    if reason is not None:
        with contextlib.suppress(OSError):
            log.unlink()
        database = _database_file(home) or "its database"
        return (
            f"Prefect's local server exited after {elapsed:.0f} s: {reason} (writing {database}); "
            "free space there or make it writable, or point PREFECT_HOME at another folder, "
            "then run again"
        )
    what = (
        f"exited with code {code} after {elapsed:.0f} s"
        if code is not None
        else f"did not answer within {timeout:.0f} s"
    )
    message = (
        f"Prefect's local server {what}. Try again (its database in {home} is kept), give it "
        f"more time with ${ENV_STARTUP_TIMEOUT}=600, or run one server yourself "
        "(`prefect server start`) and set PREFECT_API_URL=http://127.0.0.1:4200/api."
    )
    tail = _tail(log)
    if tail:
        message += f"\nlast lines of the server's output:\n{tail}"
    with contextlib.suppress(OSError):
        log.unlink()
    return message
