"""``run --backend kubeflow|native`` end to end through Prefect, against a FAKE cluster.

The Kubernetes API server here is kmock's emulator on loopback plus a fake operator (see
``tests/process/kubernetes/fake_cluster.py``): no Kubernetes API server can run where these tests
run. Everything else is real: the Prefect flow and task runs on the test server, the executor
registry, the kubeconfig read from ``KUBECONFIG``, and the HTTP calls a cluster would get.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import polyaxon_prefect
from polyaxon_prefect.prefect.kubernetes._kubernetes import POLL_ENV
from tests.process.kubernetes.fake_cluster import ever, fake_cluster, kubeconfig, live

pytestmark = pytest.mark.cluster

_ROOT = Path(__file__).resolve().parents[2]
PYTORCH = _ROOT / "examples" / "distributed" / "pytorchjob.yaml"


@contextlib.contextmanager
def cluster_in_background(scenario: str = "succeed", kubelet: Any = None) -> Iterator[Any]:
    """The fake cluster served from its own event loop in a thread, for synchronous callers."""
    ready = threading.Event()
    stop: dict[str, Any] = {}
    holder: dict[str, Any] = {}

    async def serve() -> None:
        async with fake_cluster(scenario, kubelet) as k:
            holder["k"] = k
            stop["event"] = asyncio.Event()
            stop["loop"] = asyncio.get_running_loop()
            ready.set()
            await stop["event"].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the fake cluster did not start"
    try:
        yield holder["k"]
    finally:
        stop["loop"].call_soon_threadsafe(stop["event"].set)
        thread.join(10)


@pytest.fixture
def fake_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from tests.process.kubernetes.fake_cluster import FakeKubelet

    with cluster_in_background(kubelet=FakeKubelet()) as k:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(str(k.url))))
        monkeypatch.setenv("KUBECONFIG", str(path))
        monkeypatch.setenv(POLL_ENV, "0.05")
        yield k


def test_a_pytorchjob_runs_on_the_kubeflow_backend(fake_kubeconfig: Any) -> None:
    result = polyaxon_prefect.run(PYTORCH, backend="kubeflow")
    assert result.status == "succeeded", result.message
    (key,) = ever(fake_kubeconfig, "pytorchjobs")
    job = json.loads(json.dumps(fake_kubeconfig.objects[key].history[0].raw))
    assert job["metadata"]["namespace"] == "default", "no pool, no namespace: `default`"
    assert job["metadata"]["name"].startswith("ddp-all-reduce-")


def test_a_distributed_op_of_a_dag_runs_on_the_native_backend_its_jobs_as_jobs(
    fake_kubeconfig: Any, tmp_path: Path
) -> None:
    (tmp_path / "ddp.yaml").write_text(PYTORCH.read_text())
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        """\
version: 1.1
kind: component
name: k8s-dag
run:
  kind: dag
  operations:
  - name: train
    pathRef: ddp.yaml
  - name: report
    dependencies: [train]
    component:
      run:
        kind: job
        container: {image: python:3.12-slim, command: [python, -c, "print('reported')"]}
"""
    )
    result = polyaxon_prefect.run(dag, backend="native")
    assert result.status == "succeeded", result.message
    assert result.ops["train"]["outputs"] == {"total": 3.0, "world_size": 3}
    assert len(ever(fake_kubeconfig, "jobs")) == 3, "master and worker Indexed Jobs, report's Job"
    assert live(fake_kubeconfig, "jobs") == [], "native runs clean up once the master is done"
    assert ever(fake_kubeconfig, "services")


TEMPLATE = _ROOT / "deployments" / "kubernetes" / "base-job-template.json"


@pytest.mark.parametrize(
    "values",
    [
        {},
        {
            "gpu_count": 2,
            "node_selector": {"pool": "gpu"},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "image_pull_secrets": [{"name": "registry"}],
            "active_deadline_seconds": 3600,
        },
    ],
)
def test_the_base_job_template_renders_a_valid_flow_run_job(values: dict[str, Any]) -> None:
    """prefect-kubernetes' own worker configuration renders the pool's template into the
    flow-run Job: strictly valid, with no GPU resource at all unless GPUs are asked for."""
    import uuid

    import kubernetes_validate
    from prefect.client.schemas.objects import FlowRun
    from prefect.utilities.asyncutils import run_coro_as_sync
    from prefect_kubernetes.worker import KubernetesWorkerJobConfiguration

    template = json.loads(TEMPLATE.read_text())
    config = run_coro_as_sync(
        KubernetesWorkerJobConfiguration.from_template_and_values(template, values)
    )
    config.prepare_for_flow_run(FlowRun(flow_id=uuid.uuid4(), name="brave-run"))
    job = config.job_manifest
    kubernetes_validate.validate(job, "1.30", strict=True)
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    if values:
        assert limits["nvidia.com/gpu"] == 2
        assert job["spec"]["activeDeadlineSeconds"] == 3600
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    else:
        assert "nvidia.com/gpu" not in limits
        assert "activeDeadlineSeconds" not in job["spec"]


def test_a_flow_run_on_the_kubernetes_pool_sees_the_pool_deployment_and_run_settings() -> None:
    """A real work pool made from the template, a deployment with job variables, a flow run
    with its own: inside that flow run, `pool_settings` merges them in the worker's order."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.flow_engine import run_flow

    from polyaxon_prefect.prefect.kubernetes._kubernetes import pool_settings

    @flow(name="pool-settings-probe")
    def probe() -> Any:
        return pool_settings()

    template = json.loads(TEMPLATE.read_text())
    template["variables"]["properties"]["namespace"]["default"] = "ml"
    template["variables"]["properties"]["tolerations"]["default"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    with get_client(sync_client=True) as client:
        pool = client.create_work_pool(
            WorkPoolCreate(name="k8s-probe", type="kubernetes", base_job_template=template),
            overwrite=True,
        )
        flow_id = client.create_flow(probe)
        deployment_id = client.create_deployment(
            flow_id,
            "probe",
            work_pool_name=pool.name,
            job_variables={"node_selector": {"pool": "gpu"}, "service_account_name": "team"},
        )
        flow_run = client.create_flow_run_from_deployment(
            deployment_id, job_variables={"service_account_name": "runner"}
        )
    settings = run_flow(probe, flow_run=flow_run)
    assert settings.namespace == "ml"
    assert settings.node_selector == {"pool": "gpu"}
    assert settings.service_account_name == "runner", "the flow run's own variables win"
    assert settings.tolerations[0]["key"] == "nvidia.com/gpu"


def test_a_distributed_op_as_sweep_trials_on_the_kubeflow_backend(
    fake_kubeconfig: Any, tmp_path: Path
) -> None:
    """Each trial of a grid over a pytorchjob is its own PyTorchJob, its param rendered in."""
    (tmp_path / "ddp.yaml").write_text(
        PYTORCH.read_text()
        .replace("tags: [examples, distributed]", "inputs:\n  - {name: lr, type: float}")
        .replace("command: [python, ddp.py]", 'command: [python, ddp.py, "--lr={{ lr }}"]')
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        """\
version: 1.1
kind: operation
pathRef: ddp.yaml
matrix:
  kind: grid
  params:
    lr: {kind: choice, value: [0.1, 0.2]}
"""
    )
    result = polyaxon_prefect.run(sweep, backend="kubeflow")
    assert result.status == "succeeded", result.message
    jobs = [
        json.loads(json.dumps(fake_kubeconfig.objects[key].history[0].raw))
        for key in ever(fake_kubeconfig, "pytorchjobs")
    ]
    commands = sorted(
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
            "command"
        ][-1]
        for job in jobs
    )
    assert commands == ["--lr=0.1", "--lr=0.2"]


def test_a_deployed_flow_takes_its_backend_from_the_job_variables_env(
    fake_kubeconfig: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``deploy --backend kubeflow`` puts POLYAXON_PREFECT_BACKEND in the deployment's env:
    the typed flow a worker runs sends its distributed op to the cluster."""
    monkeypatch.setenv("POLYAXON_PREFECT_BACKEND", "kubeflow")
    state = polyaxon_prefect.to_flow(PYTORCH)(return_state=True)
    assert state.is_completed(), state.message
    assert len(ever(fake_kubeconfig, "pytorchjobs")) == 1
