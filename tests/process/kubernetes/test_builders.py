"""The manifest builders piece by piece: refusals, the native env contract, pod parts, names."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.kubernetes import build_manifests
from polyaxon_prefect.loading import load_polyaxonfile
from tests.unit.kubernetes.test_builders import SOURCES, _load, _replica, _run

pytestmark = pytest.mark.process


# --- refusals --------------------------------------------------------------------------------


# --- strict validation catches what the API server would prune -----------------------------


# --- the native env contract ----------------------------------------------------------------


def _pod_env(job: dict[str, Any], index: int) -> dict[str, str]:
    """Run the container's wrapper in ``sh`` as the pod with ``index`` would, printing env."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    env["JOB_COMPLETION_INDEX"] = str(index)
    command = container["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    script = command[2].replace('exec "$@"', "env")
    result = subprocess.run(
        ["/bin/sh", "-c", script, command[3]], env=env, capture_output=True, text=True, check=True
    )
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_native_tf_config_per_index_and_overrides(tmp_path: Path) -> None:
    path = SOURCES / "legacy_tensorflow_master_7_workers_3_ps.yml"
    manifests = build_manifests(load_polyaxonfile(path))
    jobs = {
        m["metadata"]["name"].removeprefix(f"{path.stem.replace('_', '-')}-"): m for m in manifests
    }
    assert [m["kind"] for m in manifests].count("Job") == 6
    # worker 2 has its own Job and its own resources (no GPU)
    worker2 = jobs["worker-2"]["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in worker2["resources"]["limits"]
    env = _pod_env(jobs["worker-3"], 1)  # the Job of workers 3..6: its pod 1 is worker 4
    config = json.loads(env["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 4}
    assert len(config["cluster"]["worker"]) == 7
    assert len(config["cluster"]["ps"]) == 3
    assert config["cluster"]["worker"][4].startswith(
        "legacy-tensorflow-master-7-workers-3-ps-worker-3-1."
    )
    assert config["cluster"]["chief"] == [
        "legacy-tensorflow-master-7-workers-3-ps-chief-0.legacy-tensorflow-master-7-workers-3-ps:2222"
    ]


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_native_torch_ranks(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _run("pytorchjob", {"master": _replica(1), "worker": _replica(3)}))
    service, master, worker = build_manifests(loaded, backend="native")
    assert service["spec"]["clusterIP"] == "None"
    assert _pod_env(master, 0)["RANK"] == "0"
    env = _pod_env(worker, 2)
    assert (env["RANK"], env["WORLD_SIZE"]) == ("3", "4")
    assert env["MASTER_ADDR"] == "run-master-0.run"
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][-3:] == ["python", "train.py", "--epochs=1"]
    assert "args" not in container


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_native_mxnet_roles(tmp_path: Path) -> None:
    replicas = {"scheduler": _replica(1), "server": _replica(2), "worker": _replica(3)}
    loaded = _load(tmp_path, _run("mxjob", replicas))
    _, scheduler, server, worker = build_manifests(loaded, backend="native")
    assert _pod_env(scheduler, 0)["DMLC_ROLE"] == "scheduler"
    env = _pod_env(worker, 2)
    assert (env["DMLC_ROLE"], env["DMLC_WORKER_ID"], env["DMLC_NUM_SERVER"]) == ("worker", "2", "2")
    assert env["DMLC_PS_ROOT_URI"] == "run-scheduler-0.run"
    assert _pod_env(server, 1)["DMLC_SERVER_ID"] == "1"


_CONTRACT_RUNS = {
    "tf-chief-ps-workers": ("tfjob", {"chief": 1, "ps": 2, "worker": 3}, {}),
    "torch-elastic": (
        "pytorchjob",
        {"master": 1, "worker": 3},
        {"elasticPolicy": {"minReplicas": 2, "maxReplicas": 4, "maxRestarts": 3}},
    ),
    "mxnet": ("mxjob", {"scheduler": 1, "server": 2, "worker": 3}, {}),
    "xgboost": ("xgbjob", {"master": 1, "worker": 2}, {}),
    "paddle-collective": ("paddlejob", {"worker": 3}, {}),
    "paddle-ps": ("paddlejob", {"master": 2, "worker": 2}, {}),
}


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.parametrize("case", sorted(_CONTRACT_RUNS))
def test_native_pods_get_the_shared_env_contract(tmp_path: Path, case: str) -> None:
    """Every native pod's env, as its wrapper really exports it (run in ``sh``), is what the
    shared contract (`distributed.replica_env`, the local backend's) gives that replica, with
    the pods' DNS names as hosts: one contract, two encodings."""
    from polyaxon_prefect.distributed import Cluster, plan_replicas, replica_env

    kind, counts, fields = _CONTRACT_RUNS[case]
    text = _run(kind, {group: _replica(n) for group, n in counts.items()} | fields)
    loaded = _load(tmp_path, text)
    service, *jobs = build_manifests(loaded, backend="native")
    port = service["spec"]["ports"][0]["port"]
    hosts: dict[str, str] = {}
    seen: dict[str, dict[str, str]] = {}
    for job in jobs:
        group = job["metadata"]["labels"]["polyaxon-prefect/replica"]
        for index in range(job["spec"]["completions"]):
            env = _pod_env(job, index)
            name = f"{group}-{env['POLYAXON_PREFECT_REPLICA_INDEX']}"
            hosts[name] = f"{job['metadata']['name']}-{index}.{service['metadata']['name']}"
            seen[name] = env
    plan = plan_replicas(loaded.operation.component.run)
    cluster = Cluster(hosts, dict.fromkeys(hosts, port), "run", kubernetes=True)
    for replica in plan.replicas:
        expected = replica_env(plan, replica, cluster)
        got = {k: v for k, v in seen[replica.name].items() if k in expected}
        assert got == expected, replica.name


# --- pod parts --------------------------------------------------------------------------------
