"""Every size has a bound, refused in one located line before anything is made.

``numRuns: 1000000000`` (random search) passed ``check`` and ``compile``, then ``run`` printed a
numpy ``MemoryError`` traceback (every draw is sampled up front); it is now refused where the
grid's size is, at ``check``, by the same limit (``POLYAXON_PREFECT_MAX_GRID``). The GPU
settings alike: ``POLYAXON_PREFECT_GPU_SHARING=100000`` gave "Too many open files" tracebacks
and 19,992 lock files, ``99999999999999999999`` hung, a ``POLYAXON_PREFECT_GPU_LOCKS`` naming a
file was a ``FileExistsError`` traceback, ``CUDA_VISIBLE_DEVICES=-1`` or ``NoDevFiles`` was read
as GPUs, and ``nvidia.com/gpu: -1`` or ``0.5`` passed ``check``. Each case is a real CLI process;
none reaches a server (the refusals come first), and none writes a run directory or a lock.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.fault, pytest.mark.process]

RANDOM = """\
version: 1.1
kind: operation
name: huge
matrix:
  kind: random
  numRuns: 1000000000
  params:
    lr: {kind: uniform, value: [0, 1]}
component:
  name: huge
  inputs: [{name: lr, type: float}]
  run: {kind: job, container: {command: [echo, "{{ lr }}"]}}
"""
GPU_JOB = """\
version: 1.1
kind: component
name: gpujob
run:
  kind: job
  container:
    command: [echo]
    resources: {limits: {nvidia.com/gpu: %s}}
"""


def _cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
            "PREFECT_HOME": str(tmp_path / "prefect"),
            "PREFECT_API_URL": "http://127.0.0.1:9/api",  # nothing listens: never reached
            "POLYAXON_PREFECT_GPU_LOCKS": str(tmp_path / "locks"),
            **env,
        },
        timeout=120,
        check=False,
    )


def test_a_random_search_past_the_limit_is_refused_at_its_numruns_line(tmp_path: Path) -> None:
    (tmp_path / "huge.yaml").write_text(RANDOM)
    line = (
        "huge.yaml:6:3: matrix.numRuns: `numRuns` of the random matrix asks for 1,000,000,000 "
        "trials, more than the limit of 1,000,000 (POLYAXON_PREFECT_MAX_GRID) (got 1000000000); "
        "hint: ask for fewer, or raise POLYAXON_PREFECT_MAX_GRID if you mean to run them all"
    )
    for command in ("check", "compile", "run"):
        done = _cli(tmp_path, command, "-f", "huge.yaml")
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert done.stderr.splitlines() == [line, "1 problem found."], (command, done.stderr)
        assert "Traceback" not in done.stdout + done.stderr
    raised = _cli(tmp_path, "check", "-f", "huge.yaml", POLYAXON_PREFECT_MAX_GRID="2000000000")
    assert raised.returncode == 0, raised.stderr  # the limit is a setting, as for grids
    assert sorted(os.listdir(tmp_path)) == ["huge.yaml"]  # no run directory, no Prefect home


@pytest.mark.parametrize("count", ["-1", "0.5", "'0.5'"])
def test_a_gpu_count_that_is_not_a_whole_number_is_refused_at_check(
    tmp_path: Path, count: str
) -> None:
    (tmp_path / "gpu.yaml").write_text(GPU_JOB % count)
    done = _cli(tmp_path, "check", "-f", "gpu.yaml")
    assert done.returncode == 1
    shown = count.strip("'")
    value = repr(shown) if count.startswith("'") else shown
    assert done.stderr.splitlines() == [
        "gpu.yaml:8:26: run.container.resources.limits.nvidia.com/gpu: a GPU count is a whole "
        f"number >= 0, got {value} for `nvidia.com/gpu`; hint: set `nvidia.com/gpu` to 0, 1, 2...",
        "1 problem found.",
    ]


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"CUDA_VISIBLE_DEVICES": "-1"},
            "gpujob.yaml:8:5: component.run.container.resources: this op asks for 1 GPU(s) but "
            "this machine has 0; hint: lower `nvidia.com/gpu` (or the replica counts), or run "
            "on a cluster",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": "NoDevFiles"},
            "gpujob.yaml:8:5: component.run.container.resources: this op asks for 1 GPU(s) but "
            "this machine has 0; hint: lower `nvidia.com/gpu` (or the replica counts), or run "
            "on a cluster",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": "0", "POLYAXON_PREFECT_GPU_SHARING": "100000"},
            "<input>: POLYAXON_PREFECT_GPU_SHARING='100000': expected a whole number of ops per "
            "GPU, from 1 to 16; hint: unset it, or set 2, 3...",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": "0", "POLYAXON_PREFECT_GPU_SHARING": "99999999999999999999"},
            "<input>: POLYAXON_PREFECT_GPU_SHARING='99999999999999999999': expected a whole "
            "number of ops per GPU, from 1 to 16; hint: unset it, or set 2, 3...",
        ),
        (
            {"CUDA_VISIBLE_DEVICES": "0", "POLYAXON_PREFECT_GPU_LOCKS": "{tmp}/a-file"},
            "<input>: POLYAXON_PREFECT_GPU_LOCKS='{tmp}/a-file' is not a folder: the GPU lock "
            "files go in one; hint: name a folder (made if missing), or unset it",
        ),
    ],
    ids=["cuda-minus-one", "no-dev-files", "sharing-100000", "sharing-huge", "locks-a-file"],
)
def test_a_gpu_setting_out_of_bounds_is_one_line_before_anything_runs(
    tmp_path: Path, env: dict[str, str], line: str
) -> None:
    (tmp_path / "gpujob.yaml").write_text(GPU_JOB % 1)
    (tmp_path / "a-file").write_text("not a folder")
    given = {key: value.replace("{tmp}", str(tmp_path)) for key, value in env.items()}
    done = _cli(tmp_path, "run", "-f", "gpujob.yaml", **given)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [line.replace("{tmp}", str(tmp_path)), "1 problem found."]
    assert "Traceback" not in done.stdout
    assert sorted(os.listdir(tmp_path)) == ["a-file", "gpujob.yaml"]  # no run, no lock files
