"""``polyaxon-prefect dashboard``: optuna-dashboard serving a real sweep's storage (a real
server process on a loopback port, read through its own HTTP API)."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run

# Looked up, not imported: importing optuna-dashboard (scikit-learn with it) costs seconds of
# CPU in every test worker that collects this file, and one worker runs it.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("optuna_dashboard") is None, reason="needs optuna-dashboard"
)

SWEEP = """\
version: 1.1
kind: operation
name: tune
matrix:
  kind: grid
  params:
    lr: {kind: choice, value: [0.1, 0.2]}
component:
  inputs: [{name: lr, type: float}]
  run:
    kind: job
    container:
      command:
      - python
      - -c
      - "from polyaxon_prefect import tracking; tracking.log_metrics(loss={{ lr }} * 2)"
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "polyaxon_prefect.cli", *args]


def test_the_dashboard_serves_the_sweeps_storage(tmp_path: Path) -> None:
    storage = tmp_path / "sweeps.journal"
    path = tmp_path / "tune.yaml"
    path.write_text(SWEEP)
    result = run(path, storage=str(storage))
    assert result.status == "succeeded", result.message

    port = _free_port()
    process = subprocess.Popen(
        _cli(
            "dashboard",
            "--storage",
            str(storage),
            "--op",
            "tune",
            "--port",
            str(port),
            "--no-browser",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert f"http://127.0.0.1:{port}/dashboard/studies/" in line, line
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=2) as r:
                    studies = json.loads(r.read())["study_summaries"]
                break
            except OSError:
                assert time.monotonic() < deadline, "the dashboard did not answer"
                time.sleep(0.3)
        [study] = studies
        assert study["study_name"].startswith("tune-")
        detail = f"http://127.0.0.1:{port}/api/studies/{study['study_id']}"
        with urllib.request.urlopen(detail, timeout=5) as response:
            trials = json.loads(response.read())["trials"]
        assert len(trials) == 2, "both grid trials"
        # what the sweep says: both succeeded (green, not red FAIL bars), with their params
        assert [t["state"] for t in trials] == ["Complete", "Complete"], trials
        shown = sorted(p["param_external_value"] for t in trials for p in t["params"])
        assert shown == ["0.1", "0.2"], trials
        page = line.split(f"http://127.0.0.1:{port}", 1)[1].split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{page}", timeout=5) as response:
            assert response.status == 200
    finally:
        process.terminate()
        process.wait(10)


_LOADED = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('LOADED', *sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'httpx'}),"
    " file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def test_no_sweep_to_show_is_a_clear_error(tmp_path: Path) -> None:
    """The lookup of the storage to show reads the artifacts root's journals, never the
    server: no Prefect is imported (optuna-dashboard and Optuna are, to serve it)."""
    argv = ["dashboard", "--storage", str(tmp_path / "empty.journal"), "--no-browser"]
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "no sweeps in" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == "LOADED", done.stderr
