"""A sweep whose background server is killed -9 under its running trials, then resumed: only
the trials that never ended run again. Real CLI processes, a new Prefect home and a free
loopback port.

A file of its own (its test runs over a minute): the parallel suite hands it to a worker of its
own, beside the other server faults of `test_server_faults.py`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_server_faults import BIN, _cli, _record, _trials_running, used_home

__all__ = ["used_home"]  # the fixture, shared with test_server_faults.py

pytestmark = [pytest.mark.slow, pytest.mark.fault, pytest.mark.process, pytest.mark.server]


SLOW_SWEEP = """\
version: 1.1
kind: operation
matrix:
  kind: grid
  concurrency: 2
  params:
    x: {kind: choice, value: [1, 2, 3, 4]}
component:
  name: slow-sweep
  inputs: [{name: x, type: int}]
  outputs: [{name: answer, type: int}]
  run:
    kind: job
    container:
      command:
        - python
        - -c
        - "import time; time.sleep(4); open('MARKS/{{ x }}', 'a').write('ran\\\\n'); \\
          from polyaxon_prefect import tracking; tracking.log_outputs(answer={{ x }})"
"""


def test_a_sweep_resumed_after_its_server_died_reruns_only_unfinished_trials(
    used_home: dict[str, str], tmp_path: Path
) -> None:
    home = used_home
    marks = tmp_path / "marks"
    marks.mkdir()
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SLOW_SWEEP.replace("MARKS", str(marks)))
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(sweep)],
        env=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _trials_running(tmp_path / "artifacts", process)
    os.killpg(json.loads(_record(home).read_text())["pid"], signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err[-3000:]
    assert "stopped answering" in err and "Traceback" not in err
    assert "status: failed" in out
    assert sorted(p.name for p in marks.iterdir()) == ["1", "2"]  # the two trials ended

    resumed = _cli(home, "run", "--resume", "-f", str(sweep))

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "status: succeeded" in resumed.stdout
    said = [line for line in resumed.stderr.splitlines() if "resuming sweep" in line]
    assert len(said) == 1 and said[0].endswith(": 2 trial(s) already done"), said
    # every point ran once: the two that ended while the server was down were not run again
    assert {p.name: p.read_text() for p in marks.iterdir()} == {
        str(x): "ran\n" for x in (1, 2, 3, 4)
    }
    assert len(re.findall(r"trial \d +succeeded", resumed.stdout)) == 4
