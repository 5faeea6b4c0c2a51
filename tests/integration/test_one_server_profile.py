"""``server start --set-profile`` points ``prefect`` commands at the background server, and the
profile still names it once it is stopped. Real CLI processes and the real background server.

A file of its own (its test runs a minute or more): the parallel suite hands it to a worker of
its own, beside the other tests of `test_one_server.py`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_one_server import BIN, STARTING, _run, home

__all__ = ["home"]  # the fixture, shared with test_one_server.py

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]


def test_server_start_points_prefect_commands_at_the_same_server(
    home: dict[str, str], tmp_path: Path
) -> None:
    port = home["POLYAXON_PREFECT_SERVER_PORT"]
    api = f"http://127.0.0.1:{port}/api"
    started = _run(home, "server", "start", "--port", port, "--set-profile")
    assert started.returncode == 0, started.stderr
    assert f"PREFECT_API_URL={api}" in started.stdout
    view = subprocess.run(
        [str(BIN / "prefect"), "config", "view"], env=home, capture_output=True, text=True
    )
    assert f"PREFECT_API_URL='{api}'" in view.stdout

    ran = _run(home, "run", "-f", str(tmp_path / "noop.yaml"), "--json")
    assert ran.returncode == 0, ran.stderr
    flow_run_id = json.loads(ran.stdout)["flow_run_id"]
    seen = subprocess.run(
        [str(BIN / "prefect"), "flow-run", "inspect", flow_run_id],
        env=home,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seen.returncode == 0 and "COMPLETED" in seen.stdout, seen.stderr

    # The profile still names the server once it is stopped: the next command starts it there.
    assert "stopped" in _run(home, "server", "stop").stdout
    back = _run(home, "run", "-f", str(tmp_path / "noop.yaml"))
    assert back.returncode == 0, back.stderr
    assert back.stderr.splitlines()[0].startswith(STARTING.format(port=port))
