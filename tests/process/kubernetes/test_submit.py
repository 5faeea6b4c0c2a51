"""Submitting a distributed op to Kubernetes: create, watch, stream logs, cancel, API errors.

Against a FAKE Kubernetes API server (kmock's emulator on loopback, see ``fake_cluster``): no
Kubernetes API server can run where these tests run. The code under test makes the same
prefect-kubernetes / kubernetes-asyncio HTTP calls it makes against a cluster; the fake
operator only writes the statuses the Training Operator or the Job controller would. Every
manifest the fake receives is validated strictly (CRD schemas, ``kubernetes-validate``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kmock
import pytest

from polyaxon_prefect.kubernetes._cluster import PoolSettings
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect.kubernetes._kubernetes import (
    ClusterExecutor,
    register_cluster_executors,
    run_on_cluster,
)
from polyaxon_prefect.runtime import PrepareOptions, executor_for
from tests.process.kubernetes.fake_cluster import (
    DDP_OUTPUTS,
    NAMESPACE,
    credentials,
    ever,
    fake_cluster,
    live,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.cluster]

_ROOT = Path(__file__).resolve().parents[3]
PYTORCH = _ROOT / "examples" / "distributed" / "pytorchjob.yaml"
LEGACY_TF = (
    _ROOT
    / "tests"
    / "golden"
    / "manifests"
    / "sources"
    / ("legacy_tensorflow_master_7_workers_3_ps.yml")
)
POOL = PoolSettings(
    namespace=NAMESPACE,
    service_account_name="trainer",
    image_pull_secrets=("registry",),
    node_selector={"pool": "gpu"},
    tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
)


async def _submit(
    k: Any,
    prepared: Any,
    *,
    cancel: threading.Event | None = None,
    settings: PoolSettings = POOL,
) -> tuple[Any, list[tuple[str, str]]]:
    lines: list[tuple[str, str]] = []
    result = await asyncio.to_thread(
        run_on_cluster,
        prepared,
        on_line=lambda stream, line: lines.append((stream, line)),
        cancel_event=cancel,
        credentials=credentials(str(k.url)),
        settings=settings,
        poll_interval=0.05,
    )
    return result, lines


def _created(k: Any, plural: str) -> dict[str, Any]:
    keys = ever(k, plural)
    assert keys, f"no {plural} was created"
    return json.loads(json.dumps(k.objects[keys[0]].history[0].raw))


def _text(lines: list[tuple[str, str]]) -> str:
    return "\n".join(line for _, line in lines)


async def test_a_pytorchjob_is_created_watched_and_its_logs_streamed(
    validate: Callable[[dict[str, Any]], None],
) -> None:
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("succeed") as k:
        result, lines = await _submit(k, prepared)
        job = _created(k, "pytorchjobs")
        still_there = live(k, "pytorchjobs")
    assert result.status == "succeeded", result.message
    assert "successfully completed" in result.message
    assert result.outputs == DDP_OUTPUTS, "the master's pod handed the outputs back"
    assert not any("::polyaxon-prefect:" in line for _, line in lines)
    validate(job)
    assert job["metadata"]["namespace"] == NAMESPACE
    for group in job["spec"]["pytorchReplicaSpecs"].values():
        pod = group["template"]["spec"]
        assert pod["serviceAccountName"] == "trainer"
        assert pod["imagePullSecrets"] == [{"name": "registry"}]
        assert pod["nodeSelector"] == {"pool": "gpu"}
        assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    text = _text(lines)
    for replica in ("master-0", "worker-0", "worker-1"):
        assert f"[{replica}] step 1 loss=0.5" in text
    assert still_there, "a finished Kubeflow job is left to the operator's cleanPodPolicy/TTL"


async def test_the_polyaxonfile_wins_over_the_pool(tmp_path: Path) -> None:
    source = tmp_path / "own.yaml"
    source.write_text(
        PYTORCH.read_text().replace(
            "  master:\n", "  master:\n    environment: {serviceAccountName: own}\n", 1
        )
    )
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(source))
    async with fake_cluster("succeed") as k:
        await _submit(k, prepared)
        job = _created(k, "pytorchjobs")
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["template"]["spec"]["serviceAccountName"] == "own"
    assert specs["Worker"]["template"]["spec"]["serviceAccountName"] == "trainer"


async def test_params_are_rendered_before_the_manifests_are_built(tmp_path: Path) -> None:
    source = tmp_path / "templated.yaml"
    source.write_text(
        """\
version: 1.1
kind: component
name: templated
inputs:
- {name: workers, type: int, value: 1}
- {name: lr, type: float, value: 0.1}
run:
  kind: pytorchjob
  master:
    replicas: 1
    container:
      image: pytorch/pytorch
      command: [python, train.py, "--lr={{ lr }}", "--out={{ globals.run_outputs_path }}"]
  worker:
    replicas: "{{ workers }}"
    container:
      image: pytorch/pytorch
      command: [python, train.py, "--lr={{ lr }}"]
"""
    )
    loaded = load_polyaxonfile(source)
    prepared = ClusterExecutor("kubeflow").prepare(
        loaded, PrepareOptions(params={"workers": 3, "lr": 0.5})
    )
    (job,) = prepared.manifests
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Worker"]["replicas"] == 3
    wrapped = specs["Master"]["template"]["spec"]["containers"][0]["command"]
    assert wrapped[:2] == ["sh", "-c"], "the master hands the run's outputs back (wrapper)"
    command = wrapped[7:]
    assert command[2] == "--lr=0.5"
    assert command[3].startswith("--out=/plx-context/artifacts/")
    assert command[3].endswith(f"/{prepared.context.uuid}/outputs")
    assert job["metadata"]["name"].endswith(prepared.context.uuid[:8])


async def test_a_failed_job_reports_the_condition_and_the_oom_diagnosis() -> None:
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("oom") as k:
        result, lines = await _submit(k, prepared)
    assert result.status == "failed"
    assert "is failed because 1 Master replica(s) failed" in result.message
    assert "OOMKilled" in result.message
    assert "raise the replica's memory limit" in result.message
    assert any(stream == "stderr" and "OOMKilled" in line for stream, line in lines)


async def test_an_image_that_cannot_be_pulled_fails_fast_and_cleans_up() -> None:
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("image_pull") as k:
        result, _ = await _submit(k, prepared)
        left = live(k, "pytorchjobs")
    assert result.status == "failed"
    assert "ImagePullError" in result.message
    assert "image pull secret" in result.message
    assert left == [], "the job that could never start is deleted"


async def test_cancelling_deletes_what_was_created() -> None:
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    cancel = threading.Event()
    async with fake_cluster("never") as k:

        async def cancel_once_created() -> None:
            while not ever(k, "pytorchjobs"):
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            cancel.set()

        canceller = asyncio.create_task(cancel_once_created())
        result, lines = await _submit(k, prepared, cancel=cancel)
        await canceller
        left = live(k, "pytorchjobs")
        deletes = len(k["delete"])
    assert result.status == "stopped"
    assert left == []
    assert deletes == 1
    assert any("deleted PyTorchJob" in line for _, line in lines)


async def test_a_timeout_fails_the_op_and_deletes_the_job(tmp_path: Path) -> None:
    source = tmp_path / "slow.yaml"
    source.write_text(PYTORCH.read_text() + "termination:\n  timeout: 1\n")
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(source))
    assert prepared.timeout == 1
    async with fake_cluster("never") as k:
        result, _ = await _submit(k, prepared)
        left = live(k, "pytorchjobs")
    assert result.status == "failed"
    assert result.message == "timed out after 1s"
    assert left == []


async def test_a_missing_crd_says_to_install_the_operator_or_use_native() -> None:
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("succeed") as k:
        (
            k["post", kmock.resource("kubeflow.org/v1/pytorchjobs")]
            << 404
            << {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": "the server could not find the requested resource",
            }
        )
        result, _ = await _submit(k, prepared)
        deletes = len(k["delete"])
    assert result.status == "failed"
    assert "the Kubeflow Training Operator is not installed" in result.message
    assert "install the Kubeflow Training Operator or use backend: native" in result.message
    assert deletes == 0, "nothing was created, so nothing is deleted"


async def test_rbac_forbidden_points_at_the_rbac_manifest() -> None:
    prepared = ClusterExecutor("native").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("succeed") as k:
        (
            k["post", kmock.resource("batch/v1/jobs")]
            << 403
            << {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "Forbidden",
                "code": 403,
                "message": 'jobs.batch is forbidden: User "system:serviceaccount:team-a:default" '
                'cannot create resource "jobs" in API group "batch"',
            }
        )
        result, lines = await _submit(k, prepared)
        services = live(k, "services")
    assert result.status == "failed"
    assert "forbidden to create jobs in namespace `team-a`" in result.message
    assert "deployments/kubernetes/rbac.yaml" in result.message
    assert services == [], "the Service created before the refusal is deleted"
    assert any("deleted Service" in line for _, line in lines)


async def test_native_legacy_tensorflow_runs_until_the_chief_completes_then_cleans_up(
    validate: Callable[[dict[str, Any]], None],
) -> None:
    """The seed's master + 7 workers + 3 ps, with worker 2's own resources: the parameter
    servers never finish, the chief decides, and every Job and the Service are deleted."""
    loaded = load_polyaxonfile(LEGACY_TF)
    register_cluster_executors()  # what the dispatcher does for a Kubernetes backend
    prepared = executor_for("tfjob", "native").prepare(loaded)
    async with fake_cluster("succeed", main_outputs={}) as k:
        result, lines = await _submit(k, prepared)
        jobs = [json.loads(json.dumps(k.objects[key].history[0].raw)) for key in ever(k, "jobs")]
        left = live(k, "jobs") + live(k, "services")
    assert result.status == "succeeded", result.message
    assert result.message == "chief completed"
    assert len(jobs) == 6
    for job in jobs:
        validate(job)
    assert left == []
    text = _text(lines)
    assert "[chief-0] hello from" in text
    assert "[worker-6] hello from" in text
    assert "[ps-2] hello from" in text


async def test_in_a_flow_run_pod_the_pod_owns_what_the_run_creates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a cluster the flow-run pod owns the run's objects, so Kubernetes' garbage collector
    deletes them when the pod goes, even when this code is killed before it can clean up."""
    from polyaxon_prefect.prefect.kubernetes import _kubernetes

    namespace_file = tmp_path / "namespace"
    namespace_file.write_text(NAMESPACE)
    monkeypatch.setattr(_kubernetes, "_IN_CLUSTER_NAMESPACE", namespace_file)
    monkeypatch.setenv("HOSTNAME", "flow-run-pod-x1")
    prepared = ClusterExecutor("kubeflow").prepare(load_polyaxonfile(PYTORCH))
    async with fake_cluster("succeed") as k:
        k.objects["v1/pods", NAMESPACE, "flow-run-pod-x1"] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "flow-run-pod-x1", "namespace": NAMESPACE, "uid": "u-123"},
        }
        result, _ = await _submit(k, prepared)
        job = _created(k, "pytorchjobs")
    assert result.status == "succeeded", result.message
    assert job["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "flow-run-pod-x1", "uid": "u-123"}
    ]
