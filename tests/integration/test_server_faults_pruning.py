"""A pruning sweep whose background server is killed -9 under its running trials, then resumed:
the trials that ended while it was down count as done. Real CLI processes, a new Prefect home
and a free loopback port.

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


PRUNED_SWEEP = """\
version: 1.1
kind: operation
matrix:
  kind: grid
  concurrency: 2
  params:
    x: {kind: choice, value: [1, 2, 3, 4]}
  earlyStopping:
    - kind: metric_early_stopping
      metric: loss
      value: -1
      optimization: minimize
      policy: {kind: median, minSamples: 1}
component:
  name: pruned-sweep
  inputs: [{name: x, type: int}]
  run:
    kind: job
    container:
      command:
        - python
        - -c
        - "import time; from polyaxon_prefect import tracking; \\
          tracking.log_metrics(step=0, loss=1.0); time.sleep(4); \\
          [tracking.log_metrics(step=s, loss=1.0) for s in range(1, STEPS)]; \\
          open('MARKS/{{ x }}', 'a').write('ran\\\\n')"
"""


def test_a_pruning_sweep_resumed_after_its_server_died_reruns_only_unfinished_trials(
    used_home: dict[str, str], tmp_path: Path
) -> None:
    """Under a pruning policy too, a trial's end (its last values to the pruner, then its
    state) is told to the study as its process ends: the two trials that ended while the
    server was down are done, and ``--resume`` runs only the two points never started. Every
    trial logs the same loss, so the median policy prunes none. The CLI, its server gone,
    waits until the study knows how each ended, however long after their processes that is."""
    home = used_home
    marks = tmp_path / "marks"
    marks.mkdir()
    sweep = tmp_path / "sweep.yaml"
    # the two trials the server's death catches log 2,500 steps as they end: telling those to
    # the pruner takes seconds after their processes are gone, and the CLI waits for it
    steps = "2500 if {{ x }} <= 2 else 2"
    sweep.write_text(PRUNED_SWEEP.replace("MARKS", str(marks)).replace("STEPS", steps))
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
    assert "status: failed" in out  # a sweep cannot report without its server
    assert sorted(p.name for p in marks.iterdir()) == ["1", "2"]  # the two trials ended

    resumed = _cli(home, "run", "--resume", "-f", str(sweep))

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = [line for line in resumed.stderr.splitlines() if "resuming sweep" in line]
    assert len(said) == 1 and said[0].endswith(": 2 trial(s) already done"), said
    assert {p.name: p.read_text() for p in marks.iterdir()} == {
        str(x): "ran\n" for x in (1, 2, 3, 4)
    }
    assert len(re.findall(r"trial \d +succeeded", resumed.stdout)) == 4
