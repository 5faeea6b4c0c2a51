"""One Prefect test server for the whole folder (starting one costs about 10 s).

The environment is set before Prefect is imported: analytics off (no telemetry noise), run
directories and Prefect's result storage (where cache records live) in a temporary folder, so a
cache entry of an earlier test session can never turn a first run into a hit.
"""

from __future__ import annotations

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
from unittest import mock

import pytest

_ROOT = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-tests-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(_ROOT / "artifacts")


@pytest.fixture(scope="session", autouse=True)
def prefect_server(prefect_database_template: Path) -> Iterator[str]:
    """The harness's API URL; heartbeats off and results stored under a temporary folder. Its
    database starts as a copy of the session's migrated one (tests/conftest.py), so each test
    worker's harness starts without migrating a database of its own (seconds of CPU each)."""
    import prefect.testing.utilities as harness
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        PREFECT_LOCAL_STORAGE_PATH,
        temporary_settings,
    )
    from prefect.testing.utilities import prefect_test_harness

    from polyaxon_prefect.runtime.session._session import SESSION_ENV

    updates = {
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None,
        PREFECT_LOCAL_STORAGE_PATH: str(_ROOT / "storage"),
    }
    # The harness's server is the test session's, not a run's: when a test that ran earlier in
    # this process opened a run session, the server must not inherit it (an in-process CLI run
    # closing that session would stop the server with the rest of the session).
    session = os.environ.pop(SESSION_ENV, None)
    # The harness makes its database `prefect-test.db` in a new `mkdtemp()` folder (and removes
    # that folder at exit): it is handed a folder that already holds the migrated copy.
    seeded = tempfile.mkdtemp(prefix="prefect-harness-")
    shutil.copyfile(prefect_database_template, Path(seeded) / "prefect-test.db")
    # A generous start limit: the suite runs four workers on two cores, each starting its own
    # harness server while the others run jobs (60 s was seen to pass by under that load).
    try:
        with contextlib.ExitStack() as started:
            started.enter_context(temporary_settings(updates=updates))
            with mock.patch.object(harness, "mkdtemp", lambda: seeded):  # for its start only
                started.enter_context(prefect_test_harness(server_startup_timeout=300))
            if session is not None:
                os.environ[SESSION_ENV] = session
            yield str(PREFECT_API_URL.value())
    finally:
        if session is not None:
            os.environ[SESSION_ENV] = session
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
