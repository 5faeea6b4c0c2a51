"""GPUs as a scheduled resource on the local backend, with simulated GPUs
(``CUDA_VISIBLE_DEVICES=0,1`` for the CLI): every op sees exactly the GPUs it asked for, ops
queue for them across a sweep and across CLIs, and a request too large is refused up front."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.distributed import NO_GPU_HINT
from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect.runs._runs import get_run, list_runs
from tests.prefect.conftest import cli_in

SCRIPT = Path(__file__).with_name("gpu_script.py")
PY = sys.executable


def _component(
    folder: Path, gpus: int, seconds: float, *, name: str = "gpu-job", extra: str = ""
) -> Path:
    resources = f"    resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n" if gpus else ""
    text = (
        f"version: 1.1\nkind: component\nname: {name}\n"
        "inputs: [{name: i, type: int, value: 0, isOptional: true}]\n"
        "run:\n  kind: job\n  container:\n"
        + resources
        + f"    command: [{PY}, {SCRIPT}, {folder / 'marks'}, '{seconds}'{extra}]\n"
    )
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _marks(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "marks").glob("*.json"))]


def _overlaps(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (a, b)
        for a, b in itertools.combinations(records, 2)
        if a["start"] < b["end"] and b["start"] < a["end"]
    ]


@pytest.fixture
def two_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process (and its CLIs) on a simulated 2-GPU machine, with its own lock folder."""
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "POLYAXON_PREFECT_GPU_LOCKS": str(tmp_path / "locks")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def test_a_sweep_of_1_gpu_trials_at_concurrency_4_runs_2_at_a_time_never_sharing_a_gpu(
    tmp_path: Path, two_gpus: dict[str, str], prefect_server: str
):
    _component(tmp_path, 1, 0.8)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "version: 1.1\nkind: operation\nname: gpu-sweep\n"
        "matrix:\n  kind: grid\n  concurrency: 4\n"
        "  params: {i: {kind: choice, value: [1, 2, 3, 4]}}\n"
        "pathRef: gpu-job.yaml\n",
        encoding="utf-8",
    )

    result = run(sweep)

    assert result.status == "succeeded", result.message
    records = _marks(tmp_path)
    assert len(records) == 4
    assert sorted(r["CUDA_VISIBLE_DEVICES"] for r in records) == ["0", "0", "1", "1"]
    assert all(r["NVIDIA_VISIBLE_DEVICES"] == r["CUDA_VISIBLE_DEVICES"] for r in records)
    overlapping = _overlaps(records)
    assert all(a["CUDA_VISIBLE_DEVICES"] != b["CUDA_VISIBLE_DEVICES"] for a, b in overlapping)
    for record in records:  # at most 2 at any start
        at = record["start"]
        assert sum(r["start"] <= at < r["end"] for r in records) <= 2
    assert len(overlapping) >= 1  # 2 GPUs: two trials did run together
    # GPU-hours: each trial's (1 GPU x its wall time), the sweep's their sum
    assert result.trials is not None and result.gpu_hours is not None
    hours = [t["gpu_hours"] for t in result.trials]
    assert all(0.8 / 3600 <= h < 30 / 3600 for h in hours)
    assert result.gpu_hours == pytest.approx(sum(hours))
    shown = json.loads(cli_in(prefect_server, "get", result.flow_run_id or "", "--json").stdout)
    assert shown["gpu_hours"] == pytest.approx(sum(hours), rel=1e-3)
    assert all("gpu_hours" in t for t in shown["trials"])
    listed = cli_in(prefect_server, "ls", "-io", "-q", "name:gpu-sweep")
    assert listed.stdout.splitlines()[0].split()[4:6] == ["duration", "gpu_hours"], listed.stdout


def test_two_clis_at_once_share_the_gpus_without_overlap_and_the_waiting_one_says_why(
    tmp_path: Path, two_gpus: dict[str, str], prefect_server: str
):
    job = _component(tmp_path, 2, 4)
    env = {**os.environ, **two_gpus, "PREFECT_API_URL": prefect_server}
    cli = [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(job), "--json"]
    procs = [
        subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 90
    while not seen and any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for row in list_runs(prefect_server, status="queued"):
            if "waiting for 2 GPUs: 2 held by run gpu-job" in row["message"]:
                seen = {"ls": row, "get": get_run(prefect_server, row["id"])}
        time.sleep(0.1)
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert json.loads(out)["status"] == "succeeded"
    records = _marks(tmp_path)
    assert [r["CUDA_VISIBLE_DEVICES"] for r in records] == ["0,1", "0,1"]
    assert _overlaps(records) == []
    assert seen, "the waiting run was never listed as queued with its reason"
    assert seen["get"]["status"] == "queued"
    assert seen["get"]["message"] == seen["ls"]["message"]


def test_a_distributed_op_larger_than_the_machine_is_refused_up_front_at_its_resources(
    tmp_path: Path, two_gpus: dict[str, str]
):
    path = tmp_path / "ptj.yaml"
    container = (
        "    container:\n      resources: {limits: {nvidia.com/gpu: 1}}\n"
        f"      command: [{PY}, -c, 'pass']\n"
    )
    path.write_text(
        "version: 1.1\nkind: component\nname: ptj\nrun:\n  kind: pytorchjob\n"
        f"  master:\n    replicas: 1\n{container}  worker:\n    replicas: 2\n{container}",
        encoding="utf-8",
    )
    env = {**os.environ, **two_gpus}
    started = time.monotonic()
    done = subprocess.run(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert (
        f"{path}:9:7: component.run.master.container.resources: the replicas ask for 3 GPU(s) "
        in done.stderr
    )
    assert "(master-0: 1, worker-0: 1, worker-1: 1) but this machine has 2" in done.stderr
    assert "this machine has 2" in done.stderr and "POLYAXON_PREFECT_GPU_SHARING" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_a_job_asking_no_gpu_sees_none_and_its_cuda_failure_gets_the_hint(
    tmp_path: Path, two_gpus: dict[str, str]
):
    job = _component(tmp_path, 0, 0, extra=", fail-like-cuda")

    result = run(job)

    assert result.status == "failed"
    assert [r["CUDA_VISIBLE_DEVICES"] for r in _marks(tmp_path)] == [""]
    assert NO_GPU_HINT in result.message


def test_a_sweep_stops_once_its_trials_spent_its_gpu_budget(
    tmp_path: Path, two_gpus: dict[str, str]
):
    _component(tmp_path, 1, 0.3)
    sweep = tmp_path / "budget.yaml"
    sweep.write_text(
        "version: 1.1\nkind: operation\nname: gpu-budget\n"
        "matrix:\n  kind: grid\n  concurrency: 1\n  maxGpuHours: 0.00001\n"
        "  params: {i: {kind: choice, value: [1, 2, 3]}}\n"
        "pathRef: gpu-job.yaml\n",
        encoding="utf-8",
    )

    result = run(sweep)

    assert len(_marks(tmp_path)) == 1
    assert result.status == "succeeded"
    assert result.reason.startswith("GPU budget spent: the trials held GPUs for ")
    assert "maxGpuHours is 1e-05" in result.reason


def test_a_sweep_too_large_for_the_machine_is_refused_once_before_it_starts(
    tmp_path: Path, two_gpus: dict[str, str]
):
    path = tmp_path / "big-sweep.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: big\n"
        "matrix:\n  kind: grid\n  params: {i: {kind: choice, value: [1, 2, 3]}}\n"
        "component:\n  inputs: [{name: i, type: int}]\n  run:\n    kind: job\n"
        "    container:\n      resources: {limits: {nvidia.com/gpu: 3}}\n"
        f"      command: [{PY}, -c, 'pass']\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), "--json"],
        env={**os.environ, **two_gpus},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    shown = json.loads(done.stdout)
    assert shown["flow_run_id"] is None and len(shown["problems"]) == 1
    problem = shown["problems"][0]
    assert (problem["file"], problem["line"], problem["rule"]) == (str(path), 12, "not_enough_gpus")


def test_parallel_dag_ops_and_replicas_each_get_their_own_gpus(
    tmp_path: Path, two_gpus: dict[str, str]
):
    marks = tmp_path / "marks"
    command = f"[{PY}, {SCRIPT}, {marks}, '0.3']"
    one_gpu = "resources: {limits: {nvidia.com/gpu: 1}}"
    group = f"{{replicas: 1, container: {{{one_gpu}, command: {command}}}}}"
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        "version: 1.1\nkind: component\nname: gpu-dag\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: a, pathRef: gpu-job.yaml}\n"
        "  - name: ddp\n    component:\n      run:\n        kind: pytorchjob\n"
        f"        master: {group}\n        worker: {group}\n",
        encoding="utf-8",
    )
    _component(tmp_path, 2, 0.3)

    result = run(dag)

    assert result.status == "succeeded", result.message
    records = _marks(tmp_path)
    assert len(records) == 3  # the 2-GPU op and the 1+1 gang never overlap on 2 GPUs
    job = [r for r in records if r["CUDA_VISIBLE_DEVICES"] == "0,1"]
    replicas = sorted((r for r in records if r not in job), key=lambda r: r["RANK"])
    assert len(job) == 1 and [r["CUDA_VISIBLE_DEVICES"] for r in replicas] in (
        ["0", "1"],
        ["1", "0"],
    )
    assert all(r["start"] >= job[0]["end"] or r["end"] <= job[0]["start"] for r in replicas)
    # torchrun's worker variables beside the operator's
    assert [(r["RANK"], r["LOCAL_RANK"], r["LOCAL_WORLD_SIZE"]) for r in replicas] == [
        ("0", "0", "1"),
        ("1", "0", "1"),
    ]
    assert [(r["GROUP_RANK"], r["ROLE_RANK"], r["ROLE_WORLD_SIZE"]) for r in replicas] == [
        ("0", "0", "2"),
        ("1", "1", "2"),
    ]
