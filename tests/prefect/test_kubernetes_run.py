"""``run --backend kubeflow|native`` end to end through Prefect, against a FAKE cluster.

The Kubernetes API server here is kmock's emulator on loopback plus a fake operator (see
``tests/unit/kubernetes/fake_cluster.py``): no Kubernetes API server can run where these tests
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
from polyaxon_prefect.prefect._kubernetes import POLL_ENV
from tests.unit.kubernetes.fake_cluster import ever, fake_cluster, kubeconfig, live

_ROOT = Path(__file__).resolve().parents[2]
PYTORCH = _ROOT / "examples" / "distributed" / "pytorchjob.yaml"


@contextlib.contextmanager
def cluster_in_background(scenario: str = "succeed") -> Iterator[Any]:
    """The fake cluster served from its own event loop in a thread, for synchronous callers."""
    ready = threading.Event()
    stop: dict[str, Any] = {}
    holder: dict[str, Any] = {}

    async def serve() -> None:
        async with fake_cluster(scenario) as k:
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
    with cluster_in_background() as k:
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


def test_a_distributed_op_of_a_dag_runs_on_the_native_backend_its_jobs_locally(
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
        container: {command: [python, -c, "print('reported')"]}
"""
    )
    result = polyaxon_prefect.run(dag, backend="native")
    assert result.status == "succeeded", result.message
    assert len(ever(fake_kubeconfig, "jobs")) == 2, "master and worker Indexed Jobs"
    assert live(fake_kubeconfig, "jobs") == [], "native runs clean up once the master is done"
    assert ever(fake_kubeconfig, "services")
