"""GPU locks are per user and machine, not per Prefect home: two CLIs on two Prefect homes, each
running a 1-GPU job on a 1-GPU (simulated) machine at the same time, never hold the GPU together;
the second waits, saying who holds it, and nothing is written under either Prefect home."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import seed_prefect_home
from tests.integration.conftest import new_home_env, no_process_left

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]

SCRIPT = Path(__file__).parents[1] / "prefect" / "gpu_script.py"
JOB = """\
version: 1.1
kind: component
name: gpu-job
run:
  kind: job
  container:
    resources: {limits: {nvidia.com/gpu: 1}}
    command: [%s, %s, %s, '8']
"""


def test_two_prefect_homes_never_hold_one_gpu_together(
    tmp_path: Path, prefect_database_template: Path
) -> None:
    marks = tmp_path / "marks"
    spec = tmp_path / "gpu-job.yaml"
    spec.write_text(JOB % (sys.executable, SCRIPT, marks))
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    envs = []
    for home in homes:
        seed_prefect_home(home, prefect_database_template)
        env = {**new_home_env(home, tmp_path / "artifacts", "0"), "CUDA_VISIBLE_DEVICES": "0"}
        env.pop("POLYAXON_PREFECT_GPU_LOCKS", None)
        envs.append(env)
    cli = [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(spec)]

    procs = [
        subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for env in envs
    ]
    outs = [p.communicate(timeout=240) for p in procs]

    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert "status: succeeded" in out, out[-3000:]
    records = [json.loads(p.read_text()) for p in marks.glob("*.json")]
    assert [r["CUDA_VISIBLE_DEVICES"] for r in records] == ["0", "0"]
    overlaps = [
        (a, b)
        for a, b in itertools.combinations(records, 2)
        if a["start"] < b["end"] and b["start"] < a["end"]
    ]
    assert overlaps == []
    waited = [
        out + err for out, err in outs if "waiting for 1 GPU: 1 held by run gpu-job" in out + err
    ]
    assert len(waited) == 1, [o[-1500:] for out in outs for o in out]
    for home in homes:
        assert not (home / "gpu-locks").exists()
        no_process_left(home)
    folder = Path("/tmp") / f"polyaxon-prefect-gpus-{os.getuid()}"
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
