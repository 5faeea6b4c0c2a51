"""The manifest builders piece by piece: refusals, the native env contract, pod parts, names."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.kubernetes import build_manifests, default_backend
from polyaxon_prefect.kubernetes._names import base_name, child_name
from polyaxon_prefect.kubernetes._pod import quantities
from polyaxon_prefect.loading import load_polyaxonfile

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ROOT / "tests" / "golden" / "manifests" / "sources"

Validate = Callable[[dict[str, Any]], None]


def _load(tmp_path: Path, text: str, name: str = "run.yaml") -> Any:
    path = tmp_path / name
    path.write_text(text)
    return load_polyaxonfile(path)


def _run(kind: str, replicas: dict[str, Any], extra: str = "") -> str:
    run = {"kind": kind, **replicas}
    return yaml.safe_dump({"version": 1.1, "kind": "component", "run": run}) + extra


def _replica(count: int, **more: Any) -> dict[str, Any]:
    container = {"image": "img:1", "command": ["python", "train.py"], "args": ["--epochs=1"]}
    return {"replicas": count, "container": container, **more}


# --- refusals --------------------------------------------------------------------------------


def test_kubeflow_refuses_index_overrides_with_a_hint(tmp_path: Path) -> None:
    overrides = {"1": {"resources": {"limits": {"cpu": 4}}}}
    loaded = _load(tmp_path, _run("tfjob", {"worker": _replica(2, indexOverrides=overrides)}))
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(loaded, backend="kubeflow")
    (problem,) = caught.value.problems
    assert problem.rule == "kubeflow_index_overrides"
    assert problem.path == ("component", "run", "worker", "indexOverrides", 1)
    assert problem.file == str(tmp_path / "run.yaml")
    assert "backend: native" in (problem.hint or "")


def test_native_refuses_mpi(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _run("mpijob", {"launcher": _replica(1), "worker": _replica(2)}))
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(loaded, backend="native")
    assert caught.value.problems[0].rule == "native_unsupported_kind"
    assert "--backend kubeflow" in (caught.value.problems[0].hint or "")


def test_templated_replica_count_is_a_problem(tmp_path: Path) -> None:
    text = _run("pytorchjob", {"master": _replica(1), "worker": _replica(1)})
    data = yaml.safe_load(text)
    data["inputs"] = [{"name": "n", "type": "int", "isOptional": True, "value": 2}]
    data["run"]["worker"]["replicas"] = "{{ n }}"
    loaded = _load(tmp_path, yaml.safe_dump(data))
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(loaded)
    assert caught.value.problems[0].rule == "k8s_templated_replicas"


# --- strict validation catches what the API server would prune -----------------------------


def test_strict_validation_catches_a_misspelt_field(validate: Validate) -> None:
    manifests = build_manifests(load_polyaxonfile(SOURCES / "tfjob_chief_2gpu_workers.yaml"))
    job = manifests[0]
    job["spec"]["runPolicy"]["backofLimit"] = 1
    with pytest.raises(AssertionError, match="backofLimit"):
        validate(job)
    native = build_manifests(
        load_polyaxonfile(SOURCES / "tfjob_chief_2gpu_workers.yaml"), backend="native"
    )
    native[1]["spec"]["template"]["spec"]["subdomian"] = "x"
    with pytest.raises(Exception, match="subdomian"):
        validate(native[1])


@pytest.mark.parametrize("backend", ["kubeflow", "native"])
@pytest.mark.parametrize(
    ("kind", "groups"),
    [
        ("xgbjob", ("master", "worker")),
        ("paddlejob", ("master", "worker")),
        ("mxjob", ("scheduler", "server", "worker")),
        ("pytorchjob", ("master", "worker")),
        ("tfjob", ("chief", "ps", "worker", "evaluator")),
    ],
)
def test_every_kind_validates(
    tmp_path: Path, validate: Validate, kind: str, groups: tuple[str, ...], backend: str
) -> None:
    replicas = {name: _replica(1 if i == 0 else 2) for i, name in enumerate(groups)}
    loaded = _load(tmp_path, _run(kind, replicas, "termination: {maxRetries: 1, ttl: 5}\n"))
    manifests = build_manifests(loaded, backend=backend)  # type: ignore[arg-type]
    for manifest in manifests:
        validate(manifest)


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


def test_run_patch_reaches_every_replica_and_git_init() -> None:
    loaded = load_polyaxonfile(SOURCES / "pytorchjob_master_2_workers.yaml")
    (job,) = build_manifests(loaded)
    specs = job["spec"]["pytorchReplicaSpecs"]
    for replica in specs.values():
        pod = replica["template"]["spec"]
        assert pod["serviceAccountName"] == "trainer"
        (init,) = pod["initContainers"]
        assert init["command"][-3:] == [
            "https://github.com/polyaxon/polyaxon-examples",
            "/plx-context/artifacts/polyaxon-examples",
            "v1.0",
        ]
        assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert specs["Worker"]["restartPolicy"] == "OnFailure"
    assert job["spec"]["elasticPolicy"]["rdzvBackend"] == "c10d"
    assert job["spec"]["nprocPerNode"] == "1"
    assert job["spec"]["runPolicy"] == {"ttlSecondsAfterFinished": 12}


def test_file_and_dockerfile_init_steps(tmp_path: Path, validate: Validate) -> None:
    init = [
        {"file": {"content": "a: 1\n", "filename": "config.yaml"}, "path": "/plx-context/cfg"},
        {"dockerfile": {"image": "python:3.11", "run": ["pip install torch"]}},
    ]
    loaded = _load(tmp_path, _run("tfjob", {"worker": _replica(2, init=init)}))
    (job,) = build_manifests(loaded)
    pod = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    first, second = pod["initContainers"]
    assert first["command"][-2:] == ["a: 1\n", "/plx-context/cfg/config.yaml"]
    assert second["command"][-2] == "FROM python:3.11\nRUN pip install torch\n"
    assert pod["volumes"] == [{"name": "plx-context", "emptyDir": {}}]
    validate(job)


def test_artifacts_init_needs_a_store(tmp_path: Path, validate: Validate) -> None:
    init = [{"artifacts": {"files": ["data/train.csv"]}}]
    loaded = _load(tmp_path, _run("tfjob", {"worker": _replica(1, init=init)}))
    with pytest.raises(PolyaxonfileError) as caught:
        build_manifests(loaded)
    assert caught.value.problems[0].rule == "k8s_init_no_store"
    store = {"name": "store", "kind": "volume_claim", "schema": {"volumeClaim": "artifacts"}}
    (job,) = build_manifests(loaded, artifacts_store=store)
    validate(job)
    pod = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    assert "/plx-artifacts-store/data/train.csv" in pod["initContainers"][0]["command"][2]


def test_secret_connection_as_env(tmp_path: Path, validate: Validate) -> None:
    catalog = {
        "s3": {
            "name": "s3",
            "kind": "s3",
            "schema": {"bucket": "s3://b"},
            "secret": {"name": "aws", "items": ["AWS_ACCESS_KEY_ID"]},
        },
        "cfg": {"name": "cfg", "kind": "custom", "configMap": {"name": "settings"}},
    }
    loaded = _load(tmp_path, _run("tfjob", {"worker": _replica(1, connections=["s3", "cfg"])}))
    (job,) = build_manifests(loaded, connections=catalog)
    validate(job)
    container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert {
        "name": "AWS_ACCESS_KEY_ID",
        "valueFrom": {"secretKeyRef": {"name": "aws", "key": "AWS_ACCESS_KEY_ID"}},
    } in container["env"]
    assert container["envFrom"] == [{"configMapRef": {"name": "settings"}}]


def test_quantities() -> None:
    assert quantities({"requests": {"gpu": 1, "cpu": 0.5, "memory": "1Gi"}}) == {
        "requests": {"nvidia.com/gpu": "1", "cpu": "0.5", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": "1"},
    }


def test_names_are_dns_labels() -> None:
    assert base_name("Train_Model") == "train-model"
    assert base_name("2fast") == "r-2fast"
    long = base_name("x" * 100)
    assert len(long) <= 40 and long != base_name("x" * 99)
    assert len(child_name(long, "tunerTracker", 12345)) <= 63


def test_default_backend(tmp_path: Path) -> None:
    assert (
        default_backend(load_polyaxonfile(SOURCES / "tfjob_chief_2gpu_workers.yaml")) == "kubeflow"
    )
    legacy = load_polyaxonfile(SOURCES / "legacy_tensorflow_master_7_workers_3_ps.yml")
    assert legacy.from_legacy
    assert default_backend(legacy) == "native"
    assert default_backend(legacy.operation) == "kubeflow"
