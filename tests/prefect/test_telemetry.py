"""`polyaxon-prefect run` sends no telemetry: Prefect's client telemetry is off (DO_NOT_TRACK),
so a first run on a terminal prints no telemetry notice (nor records that it showed one).

Prefect shows its notice only to a new user (a fresh home) on a terminal, outside CI: the run
here gets exactly that, a pseudo-terminal as its stdout and stderr and no CI variables."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

JOB = """\
version: 1.1
kind: component
name: hello
run:
  kind: job
  container:
    command: [python, -c, "print('hello from the job')"]
"""
NOTICE = "anonymous usage data"
CI_VARS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "BUILDKITE", "TF_BUILD", "CI_NAME")


def _read_all(fd: int, process: subprocess.Popen[bytes], seconds: float) -> str:
    """Everything the process writes on the terminal until it exits."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other side closed: the process is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=max(1.0, deadline - time.monotonic()))
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_run_on_a_terminal_prints_no_telemetry_notice(
    tmp_path: Path, prefect_server: str
) -> None:
    path = tmp_path / "hello.yaml"
    path.write_text(JOB)
    home = tmp_path / "prefect-home"  # a new user, to whom Prefect would show its notice
    env = {k: v for k, v in os.environ.items() if k not in (*CI_VARS, "DO_NOT_TRACK")}
    env |= {
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": prefect_server,
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
    }
    env.pop("PREFECT_PROFILES_PATH", None)
    main, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    try:
        output = _read_all(main, process, 180)
    finally:
        os.close(main)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "hello from the job" in output  # the run really ran, on the terminal
    assert NOTICE not in output and "DO_NOT_TRACK" not in output
    assert not (home / ".sdk_telemetry" / "notice_shown").exists()
