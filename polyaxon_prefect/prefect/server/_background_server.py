"""``polyaxon-prefect server start|stop|status``: a local Prefect server that outlives the CLI.

Every ``polyaxon-prefect run`` without ``PREFECT_API_URL`` otherwise starts Prefect's server for
itself (`prefect._server`) and pays its start each time. This one is started once, in the
background (its own session, so closing the terminal does not stop it), with its UI, on a
loopback port, over the user's Prefect home (SQLite there, or PostgreSQL with
``--database-url``); ``run`` finds it through a small record in the Prefect home and uses it
(saying so in one line). ``PREFECT_API_URL`` set by the user always wins.

Standard library only: ``run`` reads the record before Prefect is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from polyaxon_prefect.client.server._local_server import (
    RECORD_FILE,
    BackgroundServer,
    healthy,
    hold_lease,
    is_our_server,
    leases_dir,
    pid_alive,
    prefect_home,
    read_server,
    record_path,
    running_server,
    start_ticks,
)
from polyaxon_prefect.client.server._runner import SOCKET_FILE, runner_enabled
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect.server._server import (
    database_url_problem,
    file_lock,
    mark_database_ready,
)
from polyaxon_prefect.prefect.server._server_process import RUNNER_ENV

__all__ = [
    "DEFAULT_PORT",
    "RECORD_FILE",
    "BackgroundServer",
    "ServerCommandError",
    "healthy",
    "hold_lease",
    "leases_dir",
    "port_to_take",
    "running_server",
    "served_here",
    "start_server",
    "stop_server",
]

_LOG_FILE = "polyaxon-prefect-server.log"
_LOCK_FILE = ".polyaxon-prefect-server-start.lock"
_SERVED_FILE = "polyaxon-prefect-server.served"
DEFAULT_PORT = 4200
_START_TIMEOUT = 300.0


class ServerCommandError(PolyaxonPrefectError):
    """The background server could not be started or stopped."""


class ServerHomeError(ServerCommandError):
    """The Prefect home cannot hold the server's database (a full disk, a read-only folder):
    a temporary server over the same home would fail the same way, so this is said once."""


def _home() -> Path:
    return prefect_home()


def _record_path() -> Path:
    return record_path()


def _healthy(api_url: str, timeout: float = 2.0) -> bool:
    return healthy(api_url, timeout)


def shown_url(url: str) -> str:
    """A database URL as it may be printed and recorded: its password replaced by ``***``."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _port_free(host: str, port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        # As the server binds: a port left in TIME_WAIT by a stopped server is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_to_take(host: str, port: int) -> int:
    """``port`` when it is free, else one the system gives free now: on a machine where another
    program (another user's server, another Prefect home's) holds the default port, each home's
    server still gets one of its own, found by the next command through its record."""
    if _port_free(host, port):
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        free: int = sock.getsockname()[1]
    return free


def _start_lock(home: Path) -> contextlib.AbstractContextManager[None]:
    """One start at a time per Prefect home: two commands that both find no server start
    one, and the second uses it."""
    return file_lock(home / _LOCK_FILE)


def _server_env(host: str, port: int, database_url: str | None) -> dict[str, str]:
    from polyaxon_prefect.runtime.session._session import SESSION_ENV

    server_only = {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_API_HOST": host,
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": f"http://{host}:{port}/api",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    }
    # the warm runner gets the user's values back (its runs read Prefect's settings as the
    # command that started the server would)
    users = {name: os.environ.get(name) for name in server_only}
    env = {**os.environ, **server_only, RUNNER_ENV: json.dumps(users)}
    # Not a run's process: a run's reaper must never stop it with the run's other processes.
    env.pop(SESSION_ENV, None)
    env.pop("PREFECT_API_URL", None)
    if database_url:
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
    return env


def start_server(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    database_url: str | None = None,
    idle_timeout: float = 0.0,
    timeout: float = _START_TIMEOUT,
    any_free_port: bool = False,
) -> tuple[BackgroundServer, bool]:
    """Start the background server unless it runs; returns it and whether it was started now.

    ``idle_timeout`` (seconds, 0 for never): the server stops itself after that long with no
    API use and no run going (`prefect._server_process`). ``any_free_port``: where ``port`` is
    held by another program, take a free one (`port_to_take`) instead of refusing; the record
    says which.

    Raises:
        ServerCommandError: the port is taken by something else, the Prefect home cannot be
            written, or the server did not come up (the message has the last lines of its log).
    """
    home = _home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        with _start_lock(home):
            current = running_server()
            if current is not None:
                return current, False
            if any_free_port:
                port = port_to_take(host, port)
            server = _spawn(home, host, port, database_url, idle_timeout, timeout)
            _note_served(server.api_url)
            return server, True
    except OSError as error:
        from polyaxon_prefect.prefect.server._server import database_problem

        kind = ServerHomeError if database_problem(home, "", database_url) else None
        raise (kind or ServerCommandError)(
            f"cannot write the Prefect home {home} ({error.strerror or error})"
        ) from error


def _spawn(
    home: Path, host: str, port: int, database_url: str | None, idle: float, timeout: float
) -> BackgroundServer:
    if not _port_free(host, port):
        raise ServerCommandError(
            f"port {port} on {host} is in use by another program: pass --port with a free one"
        )
    log_path = home / _LOG_FILE
    command = [
        sys.executable,
        "-m",
        "polyaxon_prefect.prefect.server._server_process",
        "--host",
        host,
        "--port",
        str(port),
        "--idle-timeout",
        str(idle),
        "--record",
        str(_record_path()),
        "--leases",
        str(leases_dir()),
    ]
    if runner_enabled():  # `run` then goes through it (`polyaxon_prefect._warm_runner`)
        command += ["--runner-socket", str(home / SOCKET_FILE)]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            env=_server_env(host, port, database_url),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this CLI and its terminal
        )
    server = BackgroundServer(
        pid=process.pid,
        url=f"http://{host}:{port}",
        log=str(log_path),
        database=shown_url(database_url) if database_url else str(home / "prefect.db"),
        idle_timeout=idle,
        started=start_ticks(process.pid),
    )
    deadline = time.monotonic() + timeout
    while not _healthy(server.api_url):
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            from polyaxon_prefect.prefect.server._server import database_problem

            text = log_path.read_text(errors="replace") if log_path.exists() else ""
            reason = database_problem(home, text, database_url)
            if reason is not None:  # its own reason, in the line a command shows
                raise ServerHomeError(f"its database cannot be written: {reason} (log: {log_path})")
            reason = database_url_problem(text) if database_url else None
            if reason is not None:  # a dead or refusing database server: one line, not a trace
                where = shown_url(database_url or "")
                raise ServerCommandError(
                    f"the Prefect server did not start: its database at {where} cannot be "
                    f"used: {reason} (log: {log_path})"
                )
            tail = "\n".join(text.splitlines()[-15:])
            raise ServerCommandError(
                f"the Prefect server did not start (log: {log_path})\n{tail}".rstrip()
            )
        time.sleep(0.2)
    _record_path().write_text(json.dumps(asdict(server)), encoding="utf-8")
    if not database_url:  # it answers, so its database is built: no "first run" wait later
        mark_database_ready(home)
    return server


def stop_server(grace: float = 15.0) -> tuple[BackgroundServer | None, bool]:
    """Stop the background server (SIGTERM to its process group, SIGKILL after ``grace``).

    Returns the record read (None when there was none) and whether a server was stopped; a
    record whose process is gone, or is now another program, is only removed."""
    record = read_server()
    with contextlib.suppress(OSError):
        _record_path().unlink()
    if record is None or not pid_alive(record.pid) or not is_our_server(record):
        return record, False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pid_alive(record.pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(record.pid, os.WNOHANG)
        time.sleep(0.2)
    if pid_alive(record.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(record.pid, signal.SIGKILL)
    return record, True


def served_here() -> list[str]:
    """The API URLs the background server of this Prefect home has served (the record goes
    when it stops; this note stays): a ``PREFECT_API_URL`` naming one of them that does not
    answer is ours to start again, any other is the user's server and never replaced."""
    try:
        urls = json.loads((_home() / _SERVED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [url for url in urls if isinstance(url, str)] if isinstance(urls, list) else []


def _note_served(api_url: str) -> None:
    served = served_here()
    if api_url not in served:
        with contextlib.suppress(OSError):  # a note only: without it a dead URL is an error
            (_home() / _SERVED_FILE).write_text(json.dumps([*served, api_url]), encoding="utf-8")
