"""The warm runner: ``run`` without importing Prefect in the CLI's process.

The background server (`prefect/server/_server_process`) starts this process next to itself
(``python -m polyaxon_prefect._warm_runner --socket PATH --server-pid PID``) and stops it when
it stops. It imports Prefect and the package once, starts no thread, and listens on a Unix
socket in the Prefect home that only its owner may use (mode 0600, and the peer's uid
checked). For each request from the CLI's thin side (`polyaxon_prefect.client.server._runner`):

1. it checks the request comes from the same interpreter and package (else the CLI runs the
   command itself, as it always did);
2. it forks a *supervisor*, which starts a session of its own and forks the *run*: a copy of
   this pre-imported interpreter that takes the CLI's standard streams (passed over the socket,
   so the run writes to the user's terminal or pipe itself), working folder, umask and
   environment, then runs the CLI's own ``run`` code path (`polyaxon_prefect.cli.run_command`)
   and exits as a CLI would (its atexit hooks, its session's reaper, its exit code). Runs never
   share an interpreter: env, cwd and secrets of one never reach another;
3. the supervisor relays the CLI's signals to the run (Ctrl-C stops it as it stops a CLI run),
   kills the run when the CLI's connection drops (the run's own reaper then stops its
   processes and marks its flow runs crashed, as for a killed CLI), and sends the run's exit
   code back. A run does not depend on this process once started: should the runner die, the
   supervisor says so in one line and the run goes on to its own end and status.

Forking is safe here because nothing in this process has started a thread or an event loop
when it forks (checked before each fork; Prefect's and Optuna's workers start in the run).
Linux only (``/proc``, ``prctl``); elsewhere the CLI never asks for it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import polyaxon_prefect
from polyaxon_prefect.client.server._runner import (
    PROTOCOL,
    compatibility,
    exit_code_of,
    socket_address,
)

__all__ = ["main"]

_PRELOAD = (
    "prefect.main",
    "prefect.flow_engine",
    "prefect.task_engine",
    "polyaxon_prefect.cli",
    "polyaxon_prefect.prefect.commands",
    "polyaxon_prefect.prefect._dispatch",
    "polyaxon_prefect.prefect._job_flow",
    "polyaxon_prefect.prefect._dag",
    "polyaxon_prefect.prefect.sweep._sweep_flow",
    "polyaxon_prefect.prefect.watch._live",
    "polyaxon_prefect.prefect.runs._run_record",
)
"""What a ``run`` imports: each module the run would otherwise import itself (seconds)."""

_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
_HEADER = struct.Struct("!I")
_MAX_REQUEST = 16 * 1024 * 1024
_TICK = 0.5
_RUNNER_NOTE_DELAY = 2.0
_PR_SET_PDEATHSIG = 1


def _preload(api_url: str | None) -> None:
    import importlib

    _memoize_prefect_settings(api_url)
    for name in _PRELOAD:
        importlib.import_module(name)
    from polyaxon_prefect.specs import Operation

    Operation.model_rebuild()  # the spec validators, built on first use otherwise (~0.5 s)
    gc.collect()
    gc.freeze()  # what is imported now is shared with every run, not copied on first touch


_CONFIG_FILES = ((".env", b"PREFECT_"), ("prefect.toml", b""), ("pyproject.toml", b"tool.prefect"))
"""Files in the working folder Prefect's settings read (and what marks one as read)."""


def settings_key() -> tuple[Any, ...]:
    """Everything Prefect's settings are read from: the ``PREFECT_*`` variables, the profiles
    file, the working folder's settings files (one without Prefect's section counts as none)."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PREFECT_")))
    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    files: list[Any] = []
    for path in (profiles, *(Path(name) for name, _ in _CONFIG_FILES)):
        marker = dict(_CONFIG_FILES).get(path.name, b"") if path is not profiles else b""
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if marker in data:
            files.append((str(path.resolve()), data))
    return env, os.environ.get("HOME"), tuple(files)


def _memoize_prefect_settings(api_url: str | None) -> None:
    """Prefect's root settings and logging configuration, computed once here for the runner's
    environment with and without this server's ``PREFECT_API_URL``, and reused by a run whose
    sources (`settings_key`) are the same: reading them again costs a run about half a second.
    A run whose sources differ reads its own, as a process of its own would."""
    import copy

    import prefect.context as context
    from prefect.logging import configuration

    settings: dict[tuple[Any, ...], Any] = {}
    logging_configs: dict[tuple[Any, ...], Any] = {}
    read_settings = context.root_settings_context
    read_logging = configuration.load_logging_config

    def root_settings_context() -> Any:
        key = settings_key()
        if key not in settings:
            settings[key] = read_settings()
        return settings[key]

    def load_logging_config(path: Path) -> dict[str, Any]:
        key = (settings_key(), str(path))
        if key not in logging_configs:
            logging_configs[key] = read_logging(path)
        return copy.deepcopy(logging_configs[key])  # dictConfig changes what it is given

    context.root_settings_context = root_settings_context
    configuration.load_logging_config = load_logging_config
    settings[settings_key()] = context.GLOBAL_SETTINGS_CONTEXT
    if api_url:
        os.environ["PREFECT_API_URL"] = api_url
        try:
            root_settings_context()
        finally:
            del os.environ["PREFECT_API_URL"]


def _read_exact(conn: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 16))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request: a length, the CLI's three standard streams (as fds), then its JSON."""
    data, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
    if len(data) < _HEADER.size:
        data += _read_exact(conn, _HEADER.size - len(data))
    (size,) = _HEADER.unpack(data)
    if size > _MAX_REQUEST or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise EOFError
    try:
        request = json.loads(_read_exact(conn, size))
    except (EOFError, ValueError):
        for fd in fds:
            os.close(fd)
        raise EOFError from None
    return request, fds


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _send(conn: socket.socket, line: str) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(f"{line}\n".encode())


class Runner:
    """The listening process: accepts requests and forks a supervisor for each."""

    def __init__(self, address: str, server_pid: int) -> None:
        self.address = address
        self.server_pid = server_pid
        self.pid = os.getpid()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.supervisors: set[int] = set()
        self.compatibility = compatibility()  # of the code imported now, not of later edits

    def listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)
        previous = os.umask(0o177)  # the socket is born 0600: only its owner may connect
        try:
            self.listener.bind(self.address)
        finally:
            os.umask(previous)
        os.chmod(self.address, 0o600)
        self.listener.listen(16)

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        while os.getppid() == self.server_pid:
            for _key, _events in selector.select(_TICK):
                with contextlib.suppress(OSError):
                    conn, _ = self.listener.accept()
                    self._serve_one(conn)
            self._reap()

    def _reap(self) -> None:
        for pid in list(self.supervisors):
            with contextlib.suppress(ChildProcessError):
                done, _status = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    continue
            self.supervisors.discard(pid)

    def _serve_one(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            conn.settimeout(10)
            if not _same_user(conn):
                return
            request, fds = _receive(conn)
            refusal = self._refusal(request)
            if refusal is not None:
                _send(conn, f"refuse {refusal}")
                return
            pid = os.fork()
            if pid == 0:  # the supervisor: never returns
                _supervise(self, conn, request, fds)
            self.supervisors.add(pid)
        except (EOFError, OSError, ValueError, TypeError):
            pass
        finally:
            if os.getpid() == self.pid:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                conn.close()

    def _refusal(self, request: dict[str, Any]) -> str | None:
        if request.get("protocol") != PROTOCOL:
            return "protocol"
        if request.get("compatibility") != self.compatibility:
            return "another interpreter or version of the package"
        if threading.active_count() != 1:  # a fork must not copy a thread's half-held locks
            return "threads"
        return None

    def close(self) -> None:
        if os.getpid() != self.pid:
            return
        self.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.address)


def _supervise(
    runner: Runner, conn: socket.socket, request: dict[str, Any], fds: list[int]
) -> None:
    """The supervisor of one run (a forked child of the runner): fork the run, relay the
    CLI's signals to it, kill it if the CLI goes away, send its exit code back."""
    code = 1
    try:
        os.setsid()  # out of the server's process group: `server stop` does not stop a run
        for name in _SIGNALS:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        runner.listener.close()
        conn.settimeout(None)
        run = os.fork()
        if run == 0:
            conn.close()
            _run(request, fds, supervisor=os.getppid())  # never returns
        for fd in fds[:2]:
            os.close(fd)
        _send(conn, f"started {run}")
        code = _watch(conn, run, runner.pid, server_pid=runner.server_pid, stderr=fds[2])
        _send(conn, f"exit {code}")
    finally:
        os._exit(0 if code >= 0 else 1)


def _watch(conn: socket.socket, run: int, runner_pid: int, *, server_pid: int, stderr: int) -> int:
    """Until the run ends: its exit code (128 + N for signal N, as a shell says it)."""
    noted = False
    gone_at: float | None = None
    buffer = b""
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ)
    while True:
        done, status = os.waitpid(run, os.WNOHANG)
        if done:
            return exit_code_of(os.waitstatus_to_exitcode(status))
        if gone_at is None and os.getppid() != runner_pid:
            gone_at = time.monotonic()
        # said once the server is known to live on: a runner stopped with its server (`server
        # stop`, a killed server) is no news, the run's own lines say what the server did
        late = gone_at is not None and time.monotonic() - gone_at > _RUNNER_NOTE_DELAY
        if late and not noted and _alive(server_pid):
            noted = True
            with contextlib.suppress(OSError):
                os.write(
                    stderr,  # the CLI's
                    b"warning: the warm runner stopped during this run (its server starts a new "
                    b"one); this run goes on to its end\n",
                )
        if not selector.select(0.2):
            continue
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:  # the CLI is gone: its run stops as a killed CLI's does (the reaper)
            with contextlib.suppress(ProcessLookupError):
                os.kill(run, signal.SIGKILL)
            os.waitpid(run, 0)
            return -1
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            word, _, number = line.decode(errors="replace").partition(" ")
            if word == "signal" and number.isdigit() and int(number) in _allowed_signals():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run, int(number))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1]
    except (ProcessLookupError, OSError):
        return False
    return state not in ("Z", "X")


def _allowed_signals() -> set[int]:
    return {int(getattr(signal, name)) for name in _SIGNALS}


def _die_with(supervisor: int) -> None:
    """The run is killed when its supervisor dies (then its reaper cleans up after it)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != supervisor:  # it died before the line above
        os._exit(1)


def _run(request: dict[str, Any], fds: list[int], *, supervisor: int) -> None:
    """The run (a forked child of the supervisor): become the CLI's process, run ``run``."""
    try:
        _die_with(supervisor)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.umask(int(request["umask"]))
        environ = {str(k): str(v) for k, v in dict(request["env"]).items()}
        os.environ.clear()
        os.environ.update(environ)
        from polyaxon_prefect.prefect._settings import apply_env_defaults

        apply_env_defaults()  # as importing `polyaxon_prefect.prefect` does in a fresh CLI
        os.chdir(str(request["cwd"]))
        sys.argv = [str(request["argv0"]), *[str(word) for word in request["argv"]]]
        _streams(request["streams"])
        _fresh_prefect()
        from polyaxon_prefect.cli import run_command

        code = run_command(list(sys.argv[1:]))
    except BaseException as error:  # the run's process must end here, said once
        if isinstance(error, KeyboardInterrupt):
            code = 130
        elif isinstance(error, SystemExit):
            code = error.code if isinstance(error.code, int) else 1
        else:
            with contextlib.suppress(OSError):
                line = f"error: the warm runner could not start this run: {error!r}\n"
                os.write(2, line.encode(errors="replace"))
            code = 1
    from polyaxon_prefect.cli import exit_as_a_process

    exit_as_a_process(code)


def _streams(streams: dict[str, Any]) -> None:
    """The standard streams as the CLI's own (same encoding, errors and buffering)."""
    for name in ("stdin", "stdout", "stderr"):
        wanted = streams.get(name) or {}
        stream = getattr(sys, name)
        with contextlib.suppress(Exception):
            stream.flush()
        with contextlib.suppress(Exception):
            stream.reconfigure(
                encoding=wanted.get("encoding") or stream.encoding,
                errors=wanted.get("errors") or stream.errors,
                line_buffering=bool(wanted.get("line_buffering")),
                write_through=bool(wanted.get("write_through")),
            )


def _fresh_prefect() -> None:
    """Prefect's settings and logging read again for this run's environment and streams (the
    runner's were read for its own; `_memoize_prefect_settings` makes that cheap when they
    agree), and a random state of its own."""
    from prefect.context import refresh_global_settings_context
    from prefect.logging import configuration

    refresh_global_settings_context()
    configuration.PROCESS_LOGGING_CONFIG.clear()
    configuration.setup_logging(incremental=False)  # handlers on this run's stderr
    from polyaxon_prefect.prefect._settings import install_log_filter

    install_log_filter()
    if "numpy" in sys.modules:
        import numpy

        numpy.random.seed()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="polyaxon-prefect-runner")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--api-url", default=None, help="the server's, as a run will set it")
    args = parser.parse_args(argv)
    _preload(args.api_url)
    runner = Runner(socket_address(Path(args.socket)), args.server_pid)
    try:
        runner.listen()
        print(
            f"warm runner {os.getpid()} ready ({polyaxon_prefect.__version__}) at {args.socket}",
            flush=True,
        )
        runner.serve()
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
