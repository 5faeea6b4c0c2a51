"""How far a running sweep or job is, as people see it: ``get --json``'s ``progress`` while it
runs (another terminal, real processes), the live block redrawn in place on a terminal (a
pseudo-terminal), and a sweep ranked by its metric's best value over steps."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.prefect.conftest import cli_in, cli_on, wait_until

SCRIPT = Path(__file__).with_name("progress_script.py")
INPUTS = """\
  inputs:
  - {name: x, type: float, value: 0.0, isOptional: true}
  - {name: hold, type: bool, value: true, isOptional: true}
  - {name: hold_from, type: float, value: 0.0, isOptional: true}
  - {name: release, type: str}
  outputs:
  - {name: loss, type: float}
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _component(name: str, release: Path, matrix: str = "", params: str = "") -> str:
    return (
        f"version: 1.1\nkind: operation\nname: {name}\n"
        f"params:\n  release: {{value: '{release}'}}\n{params}{matrix}"
        f"component:\n{INPUTS}"
        f"  run:\n    kind: job\n    container:\n      command: [{sys.executable}, {SCRIPT}]\n"
    )


def _get(api: str, name: str) -> dict[str, Any]:
    """``get NAME --json`` (in this process: it is polled, and a second process per poll would
    spend seconds of imports, on the cores the run needs); ``{}`` while no run has that name
    yet. The text view is read from another process once the run has ended."""
    done = cli_in(api, "get", name, "--json")
    return dict(json.loads(done.stdout)) if done.returncode == 0 else {}


def _read_terminal(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other side closed: the process is gone
            return
        if not chunk:
            return
        into.append(chunk)


def test_running_sweep_reports_progress_on_the_terminal_and_to_get(
    tmp_path: Path, prefect_server: str
):
    api = prefect_server
    release = tmp_path / "release"
    name = "progress-sweep"
    matrix = (
        "matrix:\n  kind: grid\n  concurrency: 2\n  metricOverSteps: best\n"
        "  params:\n    x: {kind: choice, value: [0.1, 0.2, 0.3, 0.4]}\n"
        "  earlyStopping:\n"
        "  - {kind: metric_early_stopping, metric: loss, value: -5, optimization: minimize}\n"
    )
    path = tmp_path / "sweep.yaml"
    held = "  hold_from: {value: 0.25}\n"  # trials 2 and 3 (x >= 0.25) hold
    path.write_text(_component(name, release, matrix, held), encoding="utf-8")
    env = {**os.environ, "PREFECT_API_URL": api, "TERM": "xterm-256color", "COLUMNS": "160"}
    main, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_terminal, args=(main, chunks), daemon=True)
    reader.start()
    try:
        # trials 0 and 1 end; 2 and 3 hold before their last step until `release` exists
        seen: dict[str, Any] = {}

        def two_done() -> bool:
            progress = _get(api, name).get("progress") or {}
            seen.update(progress)
            return progress.get("done") == 2 and progress.get("running") == 2

        assert wait_until(two_done, timeout=120, step=0.5), (seen, b"".join(chunks)[-3000:])
        assert seen["total"] == 4 and seen["failed"] == 0 and seen["fraction"] == 0.5
        assert isinstance(seen["eta_seconds"], float) and seen["eta_seconds"] >= 0
        # trial 1 (x=0.2): its best over steps, 0.01 - 0.1, not its last value 0.01
        best = seen["best"]
        assert best["trial"] == 1 and best["params"] == {"x": 0.2}
        assert abs(best["value"] - (0.01 - 0.1)) < 1e-9
        assert best["ranked_by"] == "best over steps" and best["metric"] == "loss"
        release.write_text("", encoding="utf-8")
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(timeout=10)
        os.close(main)
    raw = b"".join(chunks).decode("utf-8", "replace")
    assert process.returncode == 0, raw
    # the block is redrawn in place: Rich goes back to its first line and erases what it drew
    assert raw.count("\r\x1b[2K") > 3
    shown = ANSI.sub("", raw)
    assert re.search(r"sweep \S+ .*4/4 .*best loss -0\.1 \(trial 2\)", shown), shown[-2000:]
    # the log lines above it: the count, the value, the best so far
    assert re.search(r"trial 2 succeeded \((3|4)/4\) loss=-0\.1 \(best -0\.1, trial 2\)", shown)
    # ... each on a line of its own, the block erased first (not drawn over, not after a bar)
    lines = [ANSI.sub("", line) for line in re.split(r"[\r\n]", raw)]
    logged = [line for line in lines if "trial 2 succeeded" in line]
    assert logged and not any("━" in line for line in logged), logged

    ended = _get(api, name)
    assert ended["status"] == "succeeded" and ended["ranked_by"] == "best over steps"
    values = {t["index"]: t["value"] for t in ended["trials"]}
    assert values[2] == -0.1 and abs(values[0] - (0.04 - 0.1)) < 1e-9  # best, not last
    assert ended["best"]["index"] == 2
    assert ended["progress"]["done"] == 4 and "eta_seconds" not in ended["progress"]


def test_running_job_reports_its_log_progress_to_get(tmp_path: Path, prefect_server: str):
    api = prefect_server
    release = tmp_path / "release"
    name = "progress-job"
    path = tmp_path / "job.yaml"
    path.write_text(_component(name, release), encoding="utf-8")
    env = {**os.environ, "PREFECT_API_URL": api}
    process = subprocess.Popen(
        [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        seen: dict[str, Any] = {}

        def half_done() -> bool:
            progress = _get(api, name).get("progress") or {}
            seen.update(progress)
            return progress.get("fraction") == 0.5

        assert wait_until(half_done, timeout=120, step=0.5), seen
        # half done after about a second: about as much again to go (counted down since)
        assert 0 <= seen["eta_seconds"] < 30, seen
        release.write_text("", encoding="utf-8")
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert json.loads(out)["status"] == "succeeded"
    ended = _get(api, name)
    assert ended["progress"] == {"fraction": 1.0}  # over: no ETA left to show
    assert "progress: 100%\n" in cli_on(api, "get", name).stdout  # the text view says it too
