"""GPU-class slots on the cluster backends: where Kueue does not admit an op, it takes all its
GPUs at once as slots of the Prefect global concurrency limit of its GPU class before any Job
is created, and gives them back however it ends.

The cluster is FAKE (tests/process/kubernetes/fake_cluster.py: kmock's emulator, a fake
kubelet that really runs each pod's command here); the Prefect server, its global concurrency
limits, the flow runs and their states are real. Each test pins its pods to an accelerator of
its own (``nvidia.com/gpu.product``), so its GPU class, and its limit, are its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import polyaxon_prefect
from polyaxon_prefect.kubernetes import KUEUE_QUEUE_LABEL, gpu_class_name
from polyaxon_prefect.prefect.kubernetes._kubernetes import POLL_ENV
from polyaxon_prefect.prefect.runs._runs import get_run, list_runs
from tests.prefect.conftest import read_logs
from tests.prefect.test_gpus import _marks, _overlaps
from tests.prefect.test_kubernetes_run import cluster_in_background
from tests.process.kubernetes.fake_cluster import FakeKubelet, ever, kubeconfig

pytestmark = [pytest.mark.cluster]

POD = """\
import json, sys, time, uuid, pathlib
folder, start = pathlib.Path(sys.argv[1]), time.time()
deadline = time.monotonic() + 60
while not (folder / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
(folder / "marks").mkdir(exist_ok=True)
mark = {"start": start, "end": time.time()}
(folder / "marks" / f"{uuid.uuid4().hex}.json").write_text(json.dumps(mark))
sys.exit(int(sys.argv[2]))
"""
"""A pod's command: it records when it held its GPUs, holding them until the test releases
it (the file ``release``), then exits with the code it is given."""


def _job(folder: Path, model: str, gpus: int, *, fail: bool = False, hold: bool = False) -> Path:
    """A ``kind: job`` asking for ``gpus`` GPUs of ``model``; its pod records when it ran
    (``hold``: its pods wait for the test's ``release``, else they end at once)."""
    if not hold:
        (folder / "release").touch()
    command = ["python", "-c", POD, str(folder), "1" if fail else "0"]
    doc = {
        "version": 1.1,
        "kind": "component",
        "name": "gpu-slots",
        "run": {
            "kind": "job",
            "environment": {"nodeSelector": {"nvidia.com/gpu.product": model}},
            "container": {
                "image": "python:3.12-slim",
                "command": command,
                "resources": {"limits": {"nvidia.com/gpu": gpus}},
            },
        },
    }
    path = folder / f"job-{gpus}-{int(fail)}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The fake cluster, this process's env pointing at it, and a GPU model of this test's."""
    with cluster_in_background(kubelet=FakeKubelet()) as k:
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump(kubeconfig(str(k.url))))
        monkeypatch.setenv("KUBECONFIG", str(config))
        monkeypatch.setenv(POLL_ENV, "0.05")
        model = f"test-{uuid.uuid4().hex[:8]}"
        yield {"k": k, "model": model, "limit": gpu_class_name("nvidia.com/gpu", model)}


def _create_limit(name: str, slots: int) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=slots))


def _active_slots(name: str) -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_global_concurrency_limit_by_name(name).active_slots


def test_two_1_gpu_jobs_on_a_1_slot_class_run_one_after_the_other_the_second_queued_with_why(
    tmp_path: Path, cluster: dict[str, Any], prefect_server: str
) -> None:
    _create_limit(cluster["limit"], 1)
    job = _job(tmp_path, cluster["model"], 1, hold=True)
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    cli = [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(job)]
    cli += ["--backend", "native", "--json"]
    procs = [
        subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    reason = f"waiting for 1 GPU of class {cluster['limit']}: 1 of 1 slots taken"
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 120
    while not seen and any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for row in list_runs(prefect_server, status="queued"):
            if row["message"] == reason:
                seen = {"ls": row, "get": get_run(prefect_server, row["id"])}
        time.sleep(0.1)
    (tmp_path / "release").touch()  # the first pod ends once the second op was seen waiting
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert json.loads(out)["status"] == "succeeded"
    records = _marks(tmp_path)
    assert len(records) == 2
    assert _overlaps(records) == [], "the two pods ran at once on a 1-slot class"
    assert len(ever(cluster["k"], "jobs")) == 2
    assert seen, "the waiting run was never listed as queued with its reason"
    assert seen["get"]["status"] == "queued"
    assert seen["get"]["message"] == reason
    assert _active_slots(cluster["limit"]) == 0, "both ops gave their slots back"


def test_an_op_asking_more_gpus_than_its_class_limit_is_refused_before_anything_is_created(
    tmp_path: Path, cluster: dict[str, Any]
) -> None:
    _create_limit(cluster["limit"], 1)
    result = polyaxon_prefect.run(_job(tmp_path, cluster["model"], 2), backend="native")
    assert result.status == "failed"
    assert f"asks for 2 GPUs of class {cluster['limit']} at once" in result.message
    assert f"prefect gcl update {cluster['limit']} --limit 2" in result.message
    assert ever(cluster["k"], "jobs") == []
    assert _active_slots(cluster["limit"]) == 0


def test_a_failing_op_gives_its_slots_back_to_the_next_op(
    tmp_path: Path, cluster: dict[str, Any]
) -> None:
    _create_limit(cluster["limit"], 1)
    failed = polyaxon_prefect.run(_job(tmp_path, cluster["model"], 1, fail=True), backend="native")
    assert failed.status == "failed"
    assert _active_slots(cluster["limit"]) == 0
    began = time.monotonic()
    result = polyaxon_prefect.run(_job(tmp_path, cluster["model"], 1), backend="native")
    assert result.status == "succeeded", result.message
    assert time.monotonic() - began < 60
    assert _active_slots(cluster["limit"]) == 0


def test_without_a_limit_for_its_class_an_op_runs_ungated_and_says_how_to_create_one(
    tmp_path: Path, cluster: dict[str, Any]
) -> None:
    result = polyaxon_prefect.run(_job(tmp_path, cluster["model"], 1), backend="native")
    assert result.status == "succeeded", result.message
    assert result.flow_run_id is not None
    logs = read_logs(result.flow_run_id)
    note = f"no Prefect global concurrency limit `{cluster['limit']}`"
    assert [line for line in logs if line.startswith(note)] != []
    assert any(f"prefect gcl create {cluster['limit']} --limit N" in line for line in logs)


def test_an_op_kueue_admits_is_not_gated_by_the_limit(
    tmp_path: Path, cluster: dict[str, Any]
) -> None:
    _create_limit(cluster["limit"], 1)
    path = _job(tmp_path, cluster["model"], 2)  # more than the limit: refused if gated
    doc = yaml.safe_load(path.read_text())
    doc["run"]["environment"]["labels"] = {KUEUE_QUEUE_LABEL: "team-gpus"}
    path.write_text(yaml.safe_dump(doc))
    result = polyaxon_prefect.run(path, backend="native")
    assert result.status == "succeeded", result.message
    (key,) = ever(cluster["k"], "jobs")
    job = cluster["k"].objects[key].history[0].raw
    assert job["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "team-gpus"
    assert _active_slots(cluster["limit"]) == 0
