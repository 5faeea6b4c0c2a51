"""``polyaxon-prefect server start|stop|status``, ``run`` finding it, ``ls`` and ``get``:
real processes (the CLI, ``prefect server start`` in the background) on a loopback port, a
temporary Prefect home."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect.client.server._runner import SOCKET_FILE
from tests.integration.conftest import free_port

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
NOOP = (
    "version: 1.1\nkind: component\nname: noop\n"
    "run: {kind: job, container: {command: [python, -c, pass]}}\n"
)
BROKEN = (
    "version: 1.1\nkind: component\nname: broken\ninputs: [{name: code, type: int, value: 3}]\n"
    "run: {kind: job, container: {command: [python, -c, 'import sys; sys.exit({{ code }})']}}\n"
)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "polyaxon-prefect"), *args], env=env, capture_output=True, text=True, timeout=300
    )


def _runner_listening(home: Path, seconds: float = 120) -> None:
    """Wait (without failing) for the server's warm runner to listen: the runs that follow then
    go through it instead of each importing Prefect in its CLI process (either way they run the
    same; the runner starts once the server answers)."""
    deadline = time.monotonic() + seconds
    while not (home / SOCKET_FILE).exists() and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.fixture
def home(tmp_path: Path, migrated_home: Path) -> Iterator[tuple[dict[str, str], int]]:
    env = {
        **os.environ,
        "PREFECT_HOME": str(migrated_home),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_PROFILE", None)
    # No idle timeout of 0 (the suite's default, a temporary server per command): `run` then
    # goes through the background server's warm runner, as a user's does, instead of paying
    # Prefect's import in each CLI process. The port is the test's own should a command start
    # the server by itself.
    env.pop("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", None)
    port = free_port()
    env["POLYAXON_PREFECT_SERVER_PORT"] = str(port)
    try:
        yield env, port
    finally:
        # with no record, `server stop` could stop nothing: a CLI process spared
        if (Path(env["PREFECT_HOME"]) / "polyaxon-prefect-server.json").exists():
            _cli(env, "server", "stop")


def test_start_run_list_get_stop(home: tuple[dict[str, str], int], tmp_path: Path) -> None:
    env, port = home
    started = _cli(env, "server", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert f"started at http://127.0.0.1:{port}" in started.stdout
    again = _cli(env, "server", "start", "--port", str(port))
    assert "already running" in again.stdout
    assert _cli(env, "server", "status").returncode == 0
    _runner_listening(Path(env["PREFECT_HOME"]))

    (tmp_path / "noop.yaml").write_text(NOOP)
    (tmp_path / "broken.yaml").write_text(BROKEN)
    ok = _cli(env, "run", "-f", str(tmp_path / "noop.yaml"))
    assert ok.returncode == 0, ok.stderr
    notices = [line for line in ok.stderr.splitlines() if "using the local Prefect server" in line]
    assert notices == [
        f"using the local Prefect server at http://127.0.0.1:{port} "
        "(`polyaxon-prefect server stop` to stop it)"
    ]
    assert _cli(env, "run", "-f", str(tmp_path / "broken.yaml"), "-P", "code=4").returncode == 1

    listed = json.loads(_cli(env, "ls", "--json").stdout)
    assert [(r["name"], r["kind"], r["status"]) for r in listed] == [
        ("broken", "job", "failed"),
        ("noop", "job", "succeeded"),
    ]
    failed = json.loads(_cli(env, "ls", "--status", "failed", "--json").stdout)
    assert [r["name"] for r in failed] == ["broken"]
    got = json.loads(_cli(env, "get", "broken", "--json").stdout)
    assert got["params"] == {"code": 4} and "exited with code 4" in got["message"]
    assert got["url"] == f"http://127.0.0.1:{port}/runs/flow-run/{got['id']}"
    assert _cli(env, "get", "no-such-run").returncode == 1
    printed = re.search(r"\(run ([0-9a-f]{32})\)", ok.stdout)  # the uuid `run` prints
    assert printed is not None, ok.stdout
    by_uuid = json.loads(_cli(env, "get", printed.group(1), "--json").stdout)
    assert (by_uuid["name"], by_uuid["uuid"]) == ("noop", printed.group(1))

    dag = tmp_path / "pipeline.yaml"
    dag.write_text(
        "version: 1.1\nkind: component\nname: pipeline\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: first, pathRef: noop.yaml}\n"
        "  - {name: second, pathRef: noop.yaml, dependencies: [first]}\n"
    )
    assert _cli(env, "run", "-f", str(dag)).returncode == 0
    pipeline = json.loads(_cli(env, "get", "pipeline", "--json").stdout)
    assert pipeline["kind"] == "dag"
    assert {op: entry["status"] for op, entry in pipeline["ops"].items()} == {
        "first": "succeeded",
        "second": "succeeded",
    }
    shown = _cli(env, "get", "pipeline").stdout
    assert "ops:\n  first: succeeded\n  second: succeeded\n" in shown
    table = _cli(env, "ls").stdout.splitlines()
    assert table[0].split() == ["name", "kind", "status", "started", "duration", "id"]
    assert table[1].split()[:3] == ["pipeline", "dag", "succeeded"]

    stopped = _cli(env, "server", "stop")
    assert "stopped the Prefect server" in stopped.stdout
    status = _cli(env, "server", "status")
    assert (status.returncode, status.stdout.strip()) == (3, "stopped")
    # With no server running, `ls` reads the same database through a server of its own.
    offline = _cli({**env, "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "0"}, "ls")
    assert offline.returncode == 0, offline.stderr
    assert "broken" in offline.stdout and "pipeline" in offline.stdout


def test_a_dead_servers_record_is_cleaned_up(home: tuple[dict[str, str], int]) -> None:
    env, port = home
    assert _cli(env, "server", "start", "--port", str(port)).returncode == 0
    record = Path(env["PREFECT_HOME"]) / "polyaxon-prefect-server.json"
    pid = json.loads(record.read_text())["pid"]
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    status = _cli(env, "server", "status")
    assert status.returncode == 3
    assert not record.exists(), "the stale record is removed"


def test_a_database_urls_password_is_never_shown() -> None:
    from polyaxon_prefect.prefect.server._background_server import shown_url

    url = "postgresql+asyncpg://prefect:s3cret-pw@db.internal:5432/prefect"
    assert shown_url(url) == "postgresql+asyncpg://prefect:***@db.internal:5432/prefect"
    assert shown_url("sqlite+aiosqlite:////home/me/.prefect/prefect.db").endswith("prefect.db")
