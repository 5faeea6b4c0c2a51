"""One Prefect test server for the whole folder (starting one costs about 10 s).

The environment is set before Prefect is imported: analytics off (no telemetry noise), run
directories and Prefect's result storage (where cache records live) in a temporary folder, so a
cache entry of an earlier test session can never turn a first run into a hit.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-tests-"))
# Every test worker imports this file and sets the artifacts root for all its tests (other
# folders' too): the folder goes when the worker exits, whether or not it started a server.
atexit.register(shutil.rmtree, _ROOT, True)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(_ROOT / "artifacts")


_HOME = _ROOT / "prefect"
# The worker's Prefect home, where its server runs as `polyaxon-prefect server start` runs it
# (with its warm runner) and where the CLI processes the tests start find it: each such
# `run` (given the server's PREFECT_API_URL) is then a fork of the runner's pre-imported
# interpreter, not a new process paying ~3 s of `import prefect`. Commands that read (`ls`,
# `get`, `logs`...) take the thin client either way. Set for this folder's tests alone
# (`pytest_runtest_setup`): a worker runs other folders' tests too, whose commands find no
# server of this home.
_OUTSIDE: list[str | None] = []


@contextlib.contextmanager
def _in_home() -> Iterator[None]:
    """PREFECT_HOME is this folder's home within (the session's fixture is torn down in the
    last test of the worker, which may be another folder's)."""
    before = os.environ.get("PREFECT_HOME")
    os.environ["PREFECT_HOME"] = str(_HOME)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PREFECT_HOME", None)
        else:
            os.environ["PREFECT_HOME"] = before


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    _OUTSIDE.append(os.environ.get("PREFECT_HOME"))
    os.environ["PREFECT_HOME"] = str(_HOME)


@pytest.hookimpl(trylast=True)  # after its fixtures (module ones included) are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    _settle_dead_sessions()
    outside = _OUTSIDE.pop() if _OUTSIDE else None
    if outside is None:
        os.environ.pop("PREFECT_HOME", None)
    else:
        os.environ["PREFECT_HOME"] = outside


_API: list[str] = []
"""The worker's server's API URL, once `prefect_server` has started it."""


def _settle_dead_sessions() -> None:
    """What the next ``run`` on this worker's server would do first, done here in-process: mark
    crashed the runs of a CLI a test killed (``kill -9``, its reaper killed too) whose journal
    is in the worker's artifacts root. A dead session's journal keeps every later command off
    the thin client and the warm runner (`client.server._thin_server._stale_session`): the next
    test's ``run`` would import Prefect in its own process (~3 CPU s) only to settle it. A test
    about that settling (`test_lifecycle.py`) does it within the test, on an artifacts root of
    its own."""
    if not _API:
        return
    from polyaxon_prefect.client.server._session_journals import (
        dead_session_of,
        home_database_target,
        journal_dir,
        read_journal,
    )

    directory = journal_dir()
    if not directory.is_dir():
        return
    targets = (_API[0].rstrip("/"), home_database_target())
    journals = [read_journal(path) for path in directory.glob("*.journal")]
    if not any(j is not None and dead_session_of(j, t) for j in journals for t in targets):
        return
    from polyaxon_prefect.runtime.session._session import recover_stale_sessions

    for target in targets:
        recover_stale_sessions(_API[0], target)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _runner_answers(socket_path: Path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(socket_path))
        except OSError:
            return False
    return True


@pytest.fixture(scope="session", autouse=True)
def prefect_server(prefect_database_template: Path) -> Iterator[str]:
    """The worker's server's API URL: this Prefect home's background server, started from a
    copy of the session's migrated database (tests/conftest.py), so it migrates nothing. In
    this process, heartbeats are off and results are stored under a temporary folder."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        PREFECT_LOCAL_STORAGE_PATH,
        temporary_settings,
    )

    from polyaxon_prefect.client.server._local_server import hold_lease
    from polyaxon_prefect.client.server._runner import SOCKET_FILE
    from polyaxon_prefect.prefect.server._background_server import start_server, stop_server
    from polyaxon_prefect.runtime.session._session import SESSION_ENV
    from tests.conftest import seed_prefect_home

    seed_prefect_home(_HOME, prefect_database_template)
    # The worker's server is the test session's, not a run's: when a test that ran earlier in
    # this process opened a run session, the server must not inherit it (an in-process CLI run
    # closing that session would stop the server with the rest of the session).
    session = os.environ.pop(SESSION_ENV, None)
    try:
        # A generous start limit: the suite runs four workers on two cores, each starting its
        # own server while the others run jobs. An idle timeout, so a server whose worker was
        # killed goes by itself; this process's lease keeps it up while the worker lives.
        with _in_home():
            hold_lease()
            server, _ = start_server(port=free_port(), idle_timeout=120, timeout=300)
    finally:
        if session is not None:
            os.environ[SESSION_ENV] = session
    try:
        # `run` goes through the runner once it answers (it imports for a few seconds after
        # the server); until then a `run` takes the CLI's own way, with the same output.
        wait_until(lambda: _runner_answers(_HOME / SOCKET_FILE), 120, step=0.2)
        updates = {
            PREFECT_API_URL: server.api_url,
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None,
            PREFECT_LOCAL_STORAGE_PATH: str(_ROOT / "storage"),
        }
        with temporary_settings(updates=updates):
            import prefect.context

            # as Prefect's test harness does: code in a context copied before now uses it too
            with prefect.context._temporary_global_settings_context(
                prefect.context.get_settings_context()
            ):
                _API.append(server.api_url)
                yield server.api_url
    finally:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)  # this process's last log lines, before it goes
        with _in_home():
            stop_server()
        shutil.rmtree(_ROOT, ignore_errors=True)


def write_component(
    folder: Path,
    run: str,
    *,
    inputs: str = "",
    outputs: str = "",
    extra: str = "",
    name: str = "demo",
) -> Path:
    """A job component file in ``folder`` (``run`` is the YAML under ``run:``, minus ``kind``)."""
    text = (
        f"version: 1.1\nkind: component\nname: {name}\ntags: [tests, prefect]\n"
        + (f"inputs:\n{textwrap.dedent(inputs)}" if inputs else "")
        + (f"outputs:\n{textwrap.dedent(outputs)}" if outputs else "")
        + textwrap.dedent(extra)
        + "run:\n  kind: job\n"
        + textwrap.indent(textwrap.dedent(run), "  ")
    )
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def read_flow_run(flow_run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


def read_task_runs(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )


def read_logs(flow_run_id: str) -> list[str]:
    """Every log message of a flow run (and its task runs), as stored by the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)  # logs are shipped in the background, in batches
    with get_client(sync_client=True) as client:
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        )
    return [log.message for log in logs]


def read_artifacts(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


class PrefectApi:
    """What the tests read back from the Prefect API."""

    flow_run = staticmethod(read_flow_run)
    task_runs = staticmethod(read_task_runs)
    logs = staticmethod(read_logs)
    artifacts = staticmethod(read_artifacts)


@pytest.fixture
def api() -> PrefectApi:
    return PrefectApi()


@pytest.fixture
def make_component(tmp_path: Path) -> Any:
    """``make_component(run, inputs=..., outputs=..., extra=..., name=...)`` -> path."""

    def make(run: str, **kwargs: Any) -> Path:
        return write_component(tmp_path, run, **kwargs)

    return make


MARK = "POLYAXON_PREFECT_TEST_MARK"
"""An environment variable a test gives the CLI it starts, to find everything it started."""


def run_processes(mark: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(predicate: Any, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def cli_on(api: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``polyaxon-prefect ARGS`` in a second process (this interpreter), on the server at
    ``api``: how a user's other terminal reads what a run left."""
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PREFECT_API_URL": api},
        timeout=120,
        check=False,
    )


def cli_in(api: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``polyaxon-prefect ARGS`` run in this process (``cli.main``), on the server at ``api``:
    what it printed and its exit code, as ``cli_on`` returns them. For the commands that only
    read or edit what runs left (``get``, ``ls``, ``logs``, ``artifacts``, ``invalidate``),
    where a second process would only add its ~3 s of ``import prefect``; keep ``cli_on``
    where the process is the point (a signal, a kill, a run of its own)."""
    from polyaxon_prefect.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = (os.environ.get("PREFECT_API_URL"), Path.cwd())
    os.environ["PREFECT_API_URL"] = api
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's refusal of a bad flag
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.chdir(before[1])
        if before[0] is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = before[0]
    return subprocess.CompletedProcess(
        ["polyaxon-prefect", *args], code, out.getvalue(), err.getvalue()
    )


def cli_json(api: str, folder: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``polyaxon-prefect ARGS --json`` in a second process started in ``folder``, on the server
    at ``api``: its exit code, its last line of output read as JSON, and what it said on stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PREFECT_API_URL": api},
        timeout=180,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else {}, done.stderr


def cli_json_in(api: str, folder: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``cli_json`` run in this process (``cli.main``, started in ``folder``), as the warm
    runner runs a command: for the verbs the runner does not take (``restart``, ``resume``),
    where a second process would only add its seconds of ``import prefect``; the ops they run
    are still processes of their own."""
    done = cli_in(api, *args, "--json", cwd=folder)
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else {}, done.stderr


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie is gone for our purpose)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True
