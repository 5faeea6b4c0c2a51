"""The background server's process: Prefect's server (API, UI, services) that stops when idle.

``python -m polyaxon_prefect.prefect.server._server_process --host H --port P --idle-timeout S``
serves
the same app ``prefect server start`` serves (`create_app(final=True)` under uvicorn), wrapped
in a small ASGI layer that notes when the API was last used and how many connections are open.
A watchdog ends the server once, for ``S`` seconds, no request came in (the health check
excepted), no connection stayed open (a worker's or a run's websocket), no process that uses
it was alive (each holds a lease, `_background_server.hold_lease`) and no flow run was
pending, running or cancelling: a server the first command started for a new user does not
stay up for ever, and never goes away under a run or a worker. ``S = 0`` means never.

Where the home's database was prepared by an earlier start of the same installation (its
record, `_prepared_database`), the app is made and served with Prefect's migration check and
block registration off; a start that did them writes that record once it answers.

On the way out it removes the record `_background_server` keeps of it, when the record is its
own, so the next command starts a new one instead of waiting on a dead address.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ActivityTracker", "main"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

IDLE_CHECK_HEADER = b"x-polyaxon-prefect-idle-check"
"""Requests carrying this header (the watchdog's own) are not use."""
_BUSY_TYPES = ["PENDING", "RUNNING", "CANCELLING"]


class ActivityTracker:
    """ASGI middleware: when the API was last used, and how many connections are open now."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.last_use = time.monotonic()
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self._counts(scope):
            await self.app(scope, receive, send)
            return
        self.open += 1
        self.last_use = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            self.last_use = time.monotonic()

    @staticmethod
    def _counts(scope: Scope) -> bool:
        if str(scope.get("path", "")).rstrip("/").endswith("/health"):
            return False
        return all(name != IDLE_CHECK_HEADER for name, _ in scope.get("headers") or [])

    def idle_for(self) -> float:
        """Seconds since the API was last used; 0 while a connection is open."""
        return 0.0 if self.open > 0 else time.monotonic() - self.last_use


def _busy_runs(api_url: str) -> int:
    """How many flow runs are pending, running or cancelling (-1 when the API did not say)."""
    body = json.dumps({"flow_runs": {"state": {"type": {"any_": _BUSY_TYPES}}}}).encode()
    request = urllib.request.Request(
        f"{api_url}/flow_runs/count",
        data=body,
        headers={"Content-Type": "application/json", IDLE_CHECK_HEADER.decode(): "1"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(json.loads(response.read()))
    except (OSError, ValueError):
        return -1


def _live_leases(leases: Path | None) -> int:
    """How many processes that use this server are alive (their files name their pids); the
    files of dead ones are removed."""
    if leases is None or not leases.is_dir():
        return 0
    alive = 0
    for entry in leases.iterdir():
        try:
            os.kill(int(entry.name), 0)
        except (ValueError, ProcessLookupError):
            entry.unlink(missing_ok=True)
            continue
        except PermissionError:
            pass
        alive += 1
    return alive


def _watch(
    tracker: ActivityTracker,
    server: uvicorn.Server,
    api_url: str,
    idle_timeout: float,
    leases: Path | None,
) -> None:
    """End ``server`` once it has been idle for ``idle_timeout`` seconds: no API use, no
    process holding a lease on it, no run going."""
    step = max(0.2, min(15.0, idle_timeout / 4))
    while not server.started and not server.should_exit:  # a first start migrates a database
        time.sleep(0.2)
    tracker.last_use = time.monotonic()
    while not server.should_exit:
        time.sleep(step)
        if _live_leases(leases):
            tracker.last_use = time.monotonic()  # a command using it counts as use
            continue
        if tracker.idle_for() < idle_timeout:
            continue
        if _busy_runs(api_url) == 0:
            server.should_exit = True


def _once_started(server: uvicorn.Server, then: Callable[[], None]) -> None:
    """Call ``then`` once the server answers (its start, migrations included, went through)."""
    while not server.started and not server.should_exit:
        time.sleep(0.2)
    if server.started:
        then()


def _forget_record(record: Path) -> None:
    """Remove the background server's record if it names this process."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        if json.loads(record.read_text(encoding="utf-8")).get("pid") == os.getpid():
            record.unlink()


class WarmRunner:
    """The warm runner (`polyaxon_prefect._warm_runner`) of this server: started once the
    server answers (its imports must not slow the server's own start), started again should it
    die (a few times), stopped with the server. Runs it started go on without it."""

    _RESTARTS = 3

    def __init__(self, socket_path: str, server: uvicorn.Server, api_url: str) -> None:
        self.socket_path = socket_path
        self.api_url = api_url
        self.server = server
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()

    def keep(self) -> None:
        while not self.server.started and not self.server.should_exit:
            time.sleep(0.2)
        for _attempt in range(self._RESTARTS + 1):
            if self._stopping.is_set() or self.server.should_exit:
                return
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "polyaxon_prefect._warm_runner",
                    "--socket",
                    self.socket_path,
                    "--server-pid",
                    str(os.getpid()),
                    "--api-url",
                    self.api_url,
                ],
                stdin=subprocess.DEVNULL,
                env=runner_env(),
                # a folder without Prefect settings files: a run's own folder decides (the
                # server's was wherever the first command ran)
                cwd=Path(self.socket_path).parent,
            )
            self.process.wait()

    def stop(self) -> None:
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        with contextlib.suppress(OSError):
            Path(self.socket_path).unlink()


RUNNER_ENV = "POLYAXON_PREFECT_RUNNER_ENV"
"""The user's values of the variables the server's environment sets for the server alone
(JSON, null for unset), which its warm runner gets back: a run there must read Prefect's
settings from the environment its command had."""


def runner_env() -> dict[str, str]:
    env = dict(os.environ)
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        for name, value in json.loads(env.pop(RUNNER_ENV, "{}")).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="polyaxon-prefect-server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle-timeout", type=float, default=0.0)
    parser.add_argument("--record", default=None, help="the record to remove on the way out")
    parser.add_argument("--leases", default=None, help="the processes that hold it up")
    parser.add_argument("--runner-socket", default=None, help="start the warm runner there")
    args = parser.parse_args(argv)

    import uvicorn
    from prefect.server.api.server import create_app

    from polyaxon_prefect.prefect.server._prepared_database import (
        record_prepared,
        skipping_prepared,
    )

    # the app is made and served under the same settings: Prefect's services ask for it again
    # by their hash (`create_app()`)
    with skipping_prepared() as settings:
        tracker = ActivityTracker(create_app(final=True))
        config = uvicorn.Config(
            tracker, host=args.host, port=args.port, log_level="error", lifespan="on"
        )
        server = uvicorn.Server(config)
        threading.Thread(
            target=_once_started,
            args=(server, lambda: record_prepared(settings)),
            name="prepared-record",
            daemon=True,
        ).start()
        leases = Path(args.leases) if args.leases else None
        if args.idle_timeout > 0:
            api_url = f"http://{args.host}:{args.port}/api"
            threading.Thread(
                target=_watch,
                args=(tracker, server, api_url, args.idle_timeout, leases),
                name="idle-watchdog",
                daemon=True,
            ).start()
        runner = (
            WarmRunner(args.runner_socket, server, f"http://{args.host}:{args.port}/api")
            if args.runner_socket
            else None
        )
        if runner is not None:
            threading.Thread(target=runner.keep, name="warm-runner", daemon=True).start()
        try:
            server.run()
        finally:
            if runner is not None:
                runner.stop()
            if args.record:
                _forget_record(Path(args.record))
    return 0 if server.started else 3  # 3: could not bind, as uvicorn says it


if __name__ == "__main__":
    raise SystemExit(main())
