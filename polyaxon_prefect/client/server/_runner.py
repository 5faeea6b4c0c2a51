"""``run`` through the warm runner: the CLI's side, without Prefect (standard library only).

The background server keeps a runner (`polyaxon_prefect._warm_runner`) with Prefect and the
package imported; `warm_run` hands it the command line, the working folder, the umask, the
environment and the three standard streams themselves (file descriptors over a Unix socket),
so the run writes to the user's terminal or pipe as a run in this process would. This process
then only relays Ctrl-C, SIGTERM and SIGHUP to the run and returns its exit code; if it is
killed, the runner sees the connection drop and kills the run, whose reaper stops its
processes and marks its flow runs crashed (as for any killed CLI).

`warm_run` returns None, and the CLI runs the command itself as it always did, whenever the
runner cannot be used: ``POLYAXON_PREFECT_RUNNER=0``, not Linux, no background server of this
Prefect home known without Prefect (`_thin_server.thin_server`: a ``PREFECT_API_URL`` or profile
that names another server, an API key, a dead session to settle first...),
``POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT=0`` without such a URL, no runner listening (yet), or a
runner of another interpreter or package version.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_RUNNER",
    "PROTOCOL",
    "SOCKET_FILE",
    "compatibility",
    "exit_code_of",
    "runner_enabled",
    "runner_status",
    "socket_address",
    "warm_run",
]

ENV_RUNNER = "POLYAXON_PREFECT_RUNNER"
"""``0`` (or ``false``, ``no``, ``off``): every ``run`` runs in the CLI's own process."""
SOCKET_FILE = "polyaxon-prefect-runner.sock"
"""The runner's socket, in the Prefect home next to the server's record."""
PROTOCOL = 1
_HEADER = struct.Struct("!I")
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
_MAX_PATH = 100
"""A Unix socket's path holds about 107 bytes: a longer one is reached through its folder."""
_OFF = ("0", "false", "no", "off")
_OWN_PROCESS = "; `run` runs in its own process"


def runner_enabled() -> bool:
    """Whether runs may go through the warm runner (``POLYAXON_PREFECT_RUNNER``, Linux)."""
    if os.environ.get(ENV_RUNNER, "").strip().lower() in _OFF:
        return False
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


def socket_address(path: Path) -> str:
    """``path`` as a socket address: through ``/proc/self/fd`` of its folder when too long."""
    text = str(path)
    if len(text.encode()) < _MAX_PATH:
        return text
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)  # open for this process's life
    return f"/proc/self/fd/{folder}/{path.name}"


def compatibility() -> dict[str, Any]:
    """What must be the same on both sides for a run to behave as in this process: the
    interpreter, the package's code (its files' place and last change: an edited checkout is
    never run by a runner that imported the old code), and where imports come from."""
    return {
        # `python` and `python3` of one environment are one interpreter
        "executable": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "package": _package_stamp(),
        "path": sys.path[1:],  # the first entry is the script's folder, which differs
    }


_PACKAGE = Path(__file__).resolve().parents[2]
"""``polyaxon_prefect/`` (this file is ``client/server/_runner.py``): the whole package's code."""


def _package_stamp() -> list[Any]:
    newest, count = 0, 0
    folders = [str(_PACKAGE)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    newest = max(newest, entry.stat().st_mtime_ns)
                    count += 1
    return [str(_PACKAGE), count, newest]


def exit_code_of(code: int) -> int:
    """A process's exit code as a shell says it: 128 + N when signal N ended it."""
    return 128 - code if code < 0 else code


def _idle_timeout_zero() -> bool:
    raw = os.environ.get("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", "").strip()
    try:
        return bool(raw) and float(raw) <= 0
    except ValueError:
        return False


def _runner_socket() -> Path | None:
    from polyaxon_prefect.client.server._local_server import prefect_home

    path = prefect_home() / SOCKET_FILE
    try:
        info = path.lstat()
    except OSError:
        return None
    mine = info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if stat.S_ISSOCK(info.st_mode) and mine else None


def runner_status() -> str:
    """What ``server status`` says of this home's warm runner: listening on its socket or not
    (a connection it takes and drops: the runner reads no request from it and goes on), and
    whether a ``run`` from this environment would go through it."""
    from polyaxon_prefect.client.server._local_server import prefect_home

    path = prefect_home() / SOCKET_FILE
    if _runner_socket() is None:
        why = "not this user's socket" if path.exists() or path.is_symlink() else "no socket"
        return f"warm runner: not running ({why} at {path}){_OWN_PROCESS}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(socket_address(path))
        except OSError:  # a socket left by a runner that died: nothing listens
            return f"warm runner: not running (nothing listens at {path}){_OWN_PROCESS}"
    said = f"warm runner: listening at {path}"
    if not runner_enabled():
        return f"{said}; `run` here does not use it ({ENV_RUNNER}={os.environ.get(ENV_RUNNER)})"
    if _idle_timeout_zero():
        return f"{said}; `run` here does not use it (POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT=0)"
    return f"{said}; `run` goes through it"


def _streams_open() -> bool:
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return False
    return True


def _stream(name: str) -> dict[str, Any]:
    stream = getattr(sys, name, None)
    return {
        "encoding": getattr(stream, "encoding", None),
        "errors": getattr(stream, "errors", None),
        "line_buffering": bool(getattr(stream, "line_buffering", False)),
        "write_through": bool(getattr(stream, "write_through", False)),
    }


def _request(argv: list[str]) -> bytes:
    umask = os.umask(0)
    os.umask(umask)
    return json.dumps(
        {
            "protocol": PROTOCOL,
            "compatibility": compatibility(),
            "argv": argv,
            "argv0": sys.argv[0] if sys.argv else "polyaxon-prefect",
            "cwd": os.getcwd(),
            "umask": umask,
            "env": dict(os.environ),
            "streams": {name: _stream(name) for name in ("stdin", "stdout", "stderr")},
        }
    ).encode()


def _names_this_homes_server(api_url: str) -> bool:
    """Whether ``api_url`` (the user's ``PREFECT_API_URL``) is this Prefect home's running
    background server's, as ``server start`` tells ``prefect`` commands to set it."""
    from polyaxon_prefect.client.server._local_server import running_server

    record = running_server()
    return record is not None and record.api_url == api_url.rstrip("/")


def _connect() -> socket.socket | None:
    if not runner_enabled() or not _streams_open():
        return None
    path = _runner_socket()
    if path is None:
        return None
    from polyaxon_prefect.client.server._thin_server import thin_server

    server = thin_server()
    if server is None:
        return None
    if server.notice is None:  # the user's PREFECT_API_URL: only if it is this home's server
        if not _names_this_homes_server(server.api_url):
            return None
    elif _idle_timeout_zero():  # a temporary server per command, not the background one
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(10)
        conn.connect(socket_address(path))
    except OSError:  # no runner listening (yet, or any more): the CLI runs it itself
        conn.close()
        return None
    return conn


def _started(conn: socket.socket, argv: list[str]) -> bytes | None:
    """Send the request; the runner's first answer when it took it, else None."""
    try:
        body = _request(argv)
        socket.send_fds(conn, [_HEADER.pack(len(body))], [0, 1, 2])
        conn.sendall(body)
        first = b""
        while b"\n" not in first:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            first += chunk
    except (OSError, ValueError):
        return None
    return first if first.startswith(b"started ") else None


def warm_run(argv: list[str]) -> int | None:
    """Run ``polyaxon-prefect run ...`` (``argv``: ``run``, ``restart`` or ``resume`` first) in
    the warm runner and return its exit code; None when the runner cannot take it (the CLI
    then runs it itself)."""
    conn = _connect()
    if conn is None:
        return None
    with contextlib.closing(conn):
        previous: dict[int, Any] = {}
        received: list[int] = []

        def relay(signum: int, _frame: Any) -> None:
            received.append(signum)
            _relay(conn, signum)

        for name in _SIGNALS:  # before the run can start: no signal is lost in between
            signum = getattr(signal, name)
            previous[signum] = signal.signal(signum, relay)
        try:
            first = _started(conn, argv)
            if first is None:  # refused: the CLI runs it, unless it was interrupted already
                return exit_code_of(-received[0]) if received else None
            conn.settimeout(None)
            return _wait(conn, first.partition(b"\n")[2])
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _relay(conn: socket.socket, signum: int) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(f"signal {signum}\n".encode())


def _wait(conn: socket.socket, buffer: bytes) -> int:
    """Until the runner says how the run ended: its exit code."""
    while True:
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            word, _, value = line.decode(errors="replace").partition(" ")
            if word == "exit":
                return int(value)
        try:
            chunk = conn.recv(4096)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            print(
                "error: the warm runner's process for this run ended without its exit status; "
                "the run was stopped as a killed CLI's run is (see `polyaxon-prefect ls`)",
                file=sys.stderr,
                flush=True,
            )
            return 1
        buffer += chunk
