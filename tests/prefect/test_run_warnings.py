"""`run` prints the file's warnings once, the same lines `check` prints: a bayes sweep's
``utilityFunction`` that the search approximates is said before the run, located, and not logged
again by the sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SWEEP = """\
version: 1.1
kind: operation
name: tune
matrix:
  kind: bayes
  numInitialRuns: 1
  maxIterations: 1
  seed: 3
  metric: {name: loss, optimization: minimize}
  utilityFunction:
    acquisitionFunction: ucb
    kappa: 1.2
    gaussianProcess: {kernel: matern, nu: 1.9}
  params:
    lr: {kind: uniform, value: 0:1}
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


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_run_prints_the_files_warning_once_as_check_does(
    tmp_path: Path, prefect_server: str
) -> None:
    path = tmp_path / "tune.yaml"
    path.write_text(SWEEP)
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_server,
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
    }
    checked = _cli("check", "-f", str(path), env=env)
    assert checked.returncode == 0, checked.stderr
    [warning] = [line for line in checked.stderr.splitlines() if "warning:" in line]
    assert warning.startswith(f"{path}:10:") and "nu: 1.9: the search uses" in warning

    ran = _cli("run", "-f", str(path), "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["status"] == "succeeded"
    assert ran.stderr.count("nu: 1.9") == 1 and warning in ran.stderr.splitlines()
    assert "the search uses" not in ran.stderr.replace(warning, "")
