"""Helpers for the integration tests: free loopback ports, waiting for a server to answer."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import seed_prefect_home

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait until ``url`` answers 200, failing at once if ``process`` (its server) exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {seconds:.0f}s")


def stop(process: subprocess.Popen[bytes], grace: float = 10) -> None:
    """Stop ``process`` (started with ``start_new_session``) and what it started: SIGINT to its
    session, as Ctrl-C would, then SIGKILL after ``grace`` seconds. A loaded machine can take
    long to shut a worker or a server down; tests assert on what the runs did, not on that."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # what is left of its session, if anything
    if process.poll() is None:
        process.kill()
    process.wait()


@contextlib.contextmanager
def prefect_server(
    folder: Path, *, ui: bool = False, database: Path | None = None
) -> Iterator[dict[str, str]]:
    """A real ``prefect server start`` on a free loopback port, its home and the artifacts
    under ``folder``; yields the environment a client or worker process needs to use it.
    ``database``: a migrated database to start from (a copy), sparing the migration."""
    if database is not None:
        seed_prefect_home(folder / "home", database)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(folder / "home"),
        "PREFECT_API_URL": api,
        "PREFECT_UI_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_WORKER_PREFETCH_SECONDS": "1",
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(folder / "artifacts"),
        "PYTHONPATH": str(REPO),
    }
    env.pop("PREFECT_PROFILE", None)
    command = [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*command, *(() if ui else ("--no-ui",))],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_http(f"{api}/health", server, 300)  # four test workers share two cores
        yield env
    finally:
        # A server of the tests alone, in a folder of theirs: its graceful shutdown (its
        # services stopping, about 7 s) is waited for 2 s, then it is killed; nothing reads
        # its database afterwards.
        stop(server, grace=2)


def create_process_pool(api: str, name: str) -> None:
    """The work pool ``prefect work-pool create NAME --type process`` makes (the process
    worker's default job template), asked for through Prefect's client in the test's process:
    a CLI process (seconds of ``import prefect``) less where the pool is set-up, not the
    point."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    pool = WorkPoolCreate(name=name, type="process", base_job_template=template)
    with (
        temporary_settings(updates={PREFECT_API_URL: api}),
        get_client(sync_client=True) as client,
    ):
        client.create_work_pool(pool)


def new_home_env(home: Path, artifacts: Path, idle: str) -> dict[str, str]:
    """The environment of a new user: a Prefect home and artifacts root of the test's own, no
    server chosen, the shared server on a free port with ``idle`` seconds of idle timeout."""
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(artifacts),
        "POLYAXON_PREFECT_SERVER_PORT": str(free_port()),
        "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": idle,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "POLYAXON_PREFECT_SESSION"):
        env.pop(name, None)
    return env


def processes_of(home: Path) -> list[int]:
    """Processes whose environment names this Prefect home (servers, jobs, reapers)."""
    marker = f"PREFECT_HOME={home}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def no_process_left(home: Path, seconds: float = 15) -> None:
    """Assert that nothing started over ``home`` still runs (after ``seconds`` of grace)."""
    deadline = time.monotonic() + seconds
    while processes_of(home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_of(home) == []
