"""One server for every command, with no set-up: real CLI processes and the real background
server on a free loopback port, a new Prefect home per test.

The first command starts the server and says so; later ones (the CLI, ``polyaxon_prefect.run``,
``ls``) use it; it outlives them and stops itself once idle; a killed server is started again by
the next command, and a run longer than its idle timeout keeps it; where another program holds
the port, each home's server takes a free one and its next command finds it by its record;
``server start --set-profile`` points ``prefect`` commands at the same server.

The held port (`test_one_server_ports.py`) and ``--set-profile`` (`test_one_server_profile.py`)
are in files of their own (a minute or more each), so the parallel suite runs them on other
workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import new_home_env

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
NOOP = (
    "version: 1.1\nkind: component\nname: noop\n"
    "run: {kind: job, container: {command: [python, -c, pass]}}\n"
)
STARTING = "starting the local Prefect server at http://127.0.0.1:{port} "
USING = "using the local Prefect server at http://127.0.0.1:{port} "


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "polyaxon-prefect"), *args], env=env, capture_output=True, text=True, timeout=300
    )


def _record(env: dict[str, str]) -> Path:
    return Path(env["PREFECT_HOME"]) / "polyaxon-prefect-server.json"


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def home(tmp_path: Path, migrated_home: Path) -> Iterator[dict[str, str]]:
    env = new_home_env(migrated_home, tmp_path / "artifacts", "8")
    (tmp_path / "noop.yaml").write_text(NOOP)
    try:
        yield env
    finally:
        if _record(env).exists():  # with no record, `server stop` could stop nothing
            _run(env, "server", "stop")


def test_the_first_command_starts_the_server_the_next_ones_share_it_until_idle(
    home: dict[str, str], tmp_path: Path
) -> None:
    port = home["POLYAXON_PREFECT_SERVER_PORT"]
    noop = str(tmp_path / "noop.yaml")
    first = _run(home, "run", "-f", noop)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines()[0].startswith(STARTING.format(port=port))
    server = json.loads(_record(home).read_text())
    assert server["idle_timeout"] == 8

    again = _run(home, "run", "-f", noop)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[0].startswith(USING.format(port=port))
    assert STARTING.format(port=port) not in again.stderr

    from_python = subprocess.run(
        [
            sys.executable,
            "-c",
            "import polyaxon_prefect, sys; r = polyaxon_prefect.run(sys.argv[1]); print(r.status)",
            noop,
        ],
        env=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert from_python.stdout.strip() == "succeeded", from_python.stderr
    assert USING.format(port=port) in from_python.stderr

    listed = _run(home, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["status"] for row in json.loads(listed.stdout)] == ["succeeded"] * 3
    assert json.loads(_record(home).read_text())["pid"] == server["pid"], "one server throughout"

    # Killed, it is started again by the next command, which runs as if nothing happened; a
    # run longer than its server's idle timeout (2 s here) keeps it: the server does not go
    # under the run (one server start for both: each costs seconds).
    os.killpg(server["pid"], signal.SIGKILL)
    assert _gone(server["pid"], 10)
    short = {**home, "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "2"}
    slow = tmp_path / "slow.yaml"
    slow.write_text(
        "version: 1.1\nkind: component\nname: slow\n"
        # 6 s: three times its server's idle timeout
        "run: {kind: job, container: {command: [python, -c, 'import time; time.sleep(6)']}}\n"
    )
    restarted = _run(short, "run", "-f", str(slow), "--json")
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stderr.splitlines()[0].startswith(STARTING.format(port=port))
    assert json.loads(restarted.stdout)["status"] == "succeeded"
    again_server = json.loads(_record(home).read_text())
    assert again_server["pid"] != server["pid"]
    assert again_server["idle_timeout"] == 2

    # Left alone, it stops itself and removes its record.
    assert _gone(again_server["pid"], 2 + 30), "the idle server did not stop"
    assert not _record(home).exists()
    assert _run(home, "server", "status").returncode == 3


def test_runs_in_one_process_with_temporary_servers_each_get_a_live_one(
    home: dict[str, str], tmp_path: Path
) -> None:
    """With no shared server, each `polyaxon_prefect.run` of one Python process starts its own
    temporary server and leaves nothing pointing at it once it is stopped: the second run must
    not try the first one's dead address."""
    home = {**home, "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "0"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import polyaxon_prefect, os, sys\n"
            "print(polyaxon_prefect.run(sys.argv[1]).status)\n"
            "print(polyaxon_prefect.run(sys.argv[1]).status)\n"
            "print(os.environ.get('PREFECT_API_URL'))\n",
            str(tmp_path / "noop.yaml"),
        ],
        env=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.split() == ["succeeded", "succeeded", "None"], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
