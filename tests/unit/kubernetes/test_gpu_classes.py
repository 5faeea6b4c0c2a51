"""GPU classes of a cluster op (pure): the Prefect global concurrency limit each GPU class is
gated by, and how many of its slots an op takes at once (replicas x GPUs per pod, over the
manifests the builder really makes for each backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.kubernetes import (
    PoolSettings,
    apply_pool_settings,
    build_manifests,
    gpu_class_name,
    gpu_slots,
    no_limit_note,
    slots_refusal,
    slots_wait_reason,
)
from polyaxon_prefect.loading import load_polyaxonfile


def _loaded(tmp_path: Path, run: dict[str, Any]) -> Any:
    path = tmp_path / "op.yaml"
    path.write_text(yaml.safe_dump({"version": 1.1, "kind": "component", "name": "t", "run": run}))
    return load_polyaxonfile(path)


def _container(gpus: int | None, key: str = "nvidia.com/gpu") -> dict[str, Any]:
    container: dict[str, Any] = {"image": "img:1", "command": ["python", "t.py"]}
    if gpus is not None:
        container["resources"] = {"limits": {key: gpus}}
    return container


def _pytorch(master: int | None, workers: int, worker_gpus: int | None) -> dict[str, Any]:
    return {
        "kind": "pytorchjob",
        "master": {"replicas": 1, "container": _container(master)},
        "worker": {"replicas": workers, "container": _container(worker_gpus)},
    }


@pytest.mark.parametrize(
    ("resource", "accelerator", "name"),
    [
        ("nvidia.com/gpu", None, "gpu-nvidia.com-gpu"),
        ("nvidia.com/gpu", "a100", "gpu-nvidia.com-gpu-a100"),
        ("nvidia.com/gpu", "NVIDIA-A100-SXM4-80GB", "gpu-nvidia.com-gpu-nvidia-a100-sxm4-80gb"),
        ("amd.com/gpu", None, "gpu-amd.com-gpu"),
        ("nvidia.com/gpu", "nvidia tesla/t4 %&<>", "gpu-nvidia.com-gpu-nvidia-tesla-t4"),
    ],
)
def test_a_gpu_class_is_named_for_prefect(resource: str, accelerator: Any, name: str) -> None:
    assert gpu_class_name(resource, accelerator) == name
    assert not set("/%&<>") & set(name), "characters Prefect refuses in a limit's name"


@pytest.mark.parametrize("backend", ["kubeflow", "native"])
def test_a_distributed_op_takes_replicas_times_gpus_per_pod(tmp_path: Path, backend: Any) -> None:
    manifests = build_manifests(_loaded(tmp_path, _pytorch(1, 3, 2)), backend=backend)
    assert gpu_slots(manifests) == {"gpu-nvidia.com-gpu": 1 + 3 * 2}


@pytest.mark.parametrize("backend", ["kubeflow", "native"])
def test_a_job_takes_its_gpus_and_an_op_without_gpus_takes_none(
    tmp_path: Path, backend: Any
) -> None:
    job = {"kind": "job", "container": _container(2)}
    assert gpu_slots(build_manifests(_loaded(tmp_path, job), backend=backend)) == {
        "gpu-nvidia.com-gpu": 2
    }
    cpu = _pytorch(None, 2, None)
    assert gpu_slots(build_manifests(_loaded(tmp_path, cpu), backend=backend)) == {}


def test_the_pools_accelerator_selector_names_the_class(tmp_path: Path) -> None:
    manifests = build_manifests(_loaded(tmp_path, _pytorch(1, 1, 1)), backend="native")
    pool = PoolSettings.from_variables(
        {"node_selector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}}
    )
    pinned = apply_pool_settings(manifests, pool, namespace=None)
    assert gpu_slots(pinned) == {"gpu-nvidia.com-gpu-nvidia-tesla-a100": 2}


def test_classes_are_counted_apart_and_a_request_without_limit_counts() -> None:
    def pod(resources: dict[str, Any], selector: dict[str, str] | None = None) -> Any:
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}]}
        if selector:
            spec["nodeSelector"] = selector
        return spec

    manifests = [
        {
            "kind": "Job",
            "spec": {
                "parallelism": 2,
                "template": {"spec": pod({"requests": {"amd.com/gpu": "1"}})},
            },
        },
        {
            "kind": "PyTorchJob",
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {
                        "template": {
                            "spec": pod(
                                {"limits": {"nvidia.com/gpu": 1}},
                                {"nvidia.com/gpu.product": "A100"},
                            )
                        }
                    },
                    "Worker": {
                        "replicas": 4,
                        "template": {
                            "spec": pod(
                                {"limits": {"nvidia.com/gpu": 2, "cpu": 4}},
                                {"nvidia.com/gpu.product": "A100"},
                            )
                        },
                    },
                }
            },
        },
        {"kind": "Service", "spec": {"clusterIP": "None"}},
    ]
    assert gpu_slots(manifests) == {"gpu-amd.com-gpu": 2, "gpu-nvidia.com-gpu-a100": 9}


def test_init_containers_run_first_so_they_do_not_add_up() -> None:
    gpu = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
    spec = {
        "containers": [gpu, gpu],
        "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 3}}}, gpu],
    }
    assert gpu_slots([{"kind": "Job", "spec": {"template": {"spec": spec}}}]) == {
        "gpu-nvidia.com-gpu": 3
    }


def test_the_lines_users_read() -> None:
    assert (
        slots_wait_reason("gpu-nvidia.com-gpu", 2, 7, 8)
        == "waiting for 2 GPUs of class gpu-nvidia.com-gpu: 7 of 8 slots taken"
    )
    assert slots_wait_reason("gpu-x", 1, None, 4) == "waiting for 1 GPU of class gpu-x: limit 4"
    refusal = slots_refusal("gpu-nvidia.com-gpu", 2, 1)
    assert "2 GPUs of class gpu-nvidia.com-gpu" in refusal and "has 1 slot," in refusal
    assert "prefect gcl update gpu-nvidia.com-gpu --limit 2" in refusal
    note = no_limit_note("gpu-nvidia.com-gpu", 1)
    assert "prefect gcl create gpu-nvidia.com-gpu --limit N" in note
