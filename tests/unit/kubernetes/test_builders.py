"""The manifest builders piece by piece: refusals, the native env contract, pod parts, names."""

from __future__ import annotations

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
