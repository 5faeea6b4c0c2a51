"""A sweep of a million-point grid starts its first trial at once, and a signal ends it `stopped`.

A real `polyaxon-prefect run` against the session's test server: nothing at sweep start is
proportional to the grid (its trials are taken by index), and SIGTERM or Ctrl-C while trials run
stops them, ends the sweep's flow run Cancelled and the CLI with 128 + the signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.schemas.objects import StateType

from tests.prefect.conftest import MARK, run_processes, wait_until

pytestmark = [
    pytest.mark.fault,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)"),
]

PY = sys.executable


@pytest.fixture
def mark() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    for pid in run_processes(value):  # whatever the test asserted, nothing outlives it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _million_grid(folder: Path, flags: Path) -> Path:
    code = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(flags)!r}, os.environ['POLYAXON_PREFECT_RUN_UUID']).touch(); "
        "time.sleep(300)"
    )
    spec = {
        "version": 1.1,
        "kind": "operation",
        "name": "million",
        "matrix": {
            "kind": "grid",
            "concurrency": 2,
            "params": {
                "x": {"kind": "range", "value": "0:1000:1"},
                "y": {"kind": "linspace", "value": {"start": 0, "stop": 1, "num": 1000}},
            },
        },
        "component": {
            "name": "trial",
            "inputs": [{"name": "x", "type": "int"}, {"name": "y", "type": "float"}],
            "run": {"kind": "job", "container": {"command": [PY, "-c", code]}},
        },
    }
    path = folder / "million.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_million_point_sweep_starts_at_once_and_a_signal_ends_it_stopped(
    sig: int, code: int, tmp_path: Path, prefect_server: str, api: Any, mark: str
) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    path = _million_grid(tmp_path, flags)
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_server,
        "POLYAXON_PREFECT_RUNNER": "0",  # the run in the signalled process (found by MARK)
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
        MARK: mark,
    }
    started = time.monotonic()
    cli = subprocess.Popen(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_until(lambda: any(flags.iterdir()) or cli.poll() is not None, 90)
    first_trial = time.monotonic() - started
    assert cli.poll() is None, cli.communicate()

    cli.send_signal(sig)
    out, err = cli.communicate(timeout=60)

    assert cli.returncode == code, err
    name = signal.Signals(sig).name
    assert [line for line in err.splitlines() if line.startswith("interrupted")] == [
        f"interrupted ({name}): stopping the run"
    ], err
    assert "Traceback" not in err
    payload = json.loads(out)
    assert payload["status"] == "stopped", payload["message"]
    assert {t["status"] for t in payload["trials"]} <= {"stopped"}, payload["trials"]
    assert api.flow_run(payload["flow_run_id"]).state.type == StateType.CANCELLED
    assert wait_until(lambda: not run_processes(mark), 10), run_processes(mark)
    # the CLI's own start (imports, server check, flow run) takes a few seconds on a busy
    # machine; a sweep that enqueued its million points first took minutes
    assert first_trial < 30, first_trial
