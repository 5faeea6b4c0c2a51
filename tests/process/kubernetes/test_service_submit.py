"""``kind: service`` on Kubernetes: a Deployment and a ClusterIP Service created, announced with
their ``kubectl port-forward`` line, kept until stopped or timed out, then deleted.

Against a FAKE Kubernetes API server (kmock's emulator on loopback; `service_cluster` plays
the Deployment controller): no API server can run where these tests run. Every manifest the
fake receives is validated strictly (``kubernetes-validate``) and by the rules a real API
server adds (`api_server_rules`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.kubernetes._cluster import PoolSettings
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect.kubernetes._kubernetes_service import (
    ServiceClusterExecutor,
    register_service_executors,
    serve_on_cluster,
)
from polyaxon_prefect.runtime import PrepareOptions, executor_for
from polyaxon_prefect.runtime._local_service import forget_serving, on_serving
from polyaxon_prefect.runtime.cluster._cluster_prepare import CONNECTIONS_ENV
from tests.process.kubernetes.fake_cluster import NAMESPACE, credentials, ever, live
from tests.process.kubernetes.service_cluster import api_server_rules, service_cluster

pytestmark = [pytest.mark.asyncio, pytest.mark.cluster]

POOL = PoolSettings(namespace=NAMESPACE, service_account_name="viewer")
CONNECTIONS = (
    "artifactsStore: {name: store, kind: volume_claim, "
    "schema: {volumeClaim: artifacts, mountPath: /artifacts}}\n"
)


def _tensorboard(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "tb.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: board\nhubRef: tensorboard\n"
        "params: {uuid: {value: 0123456789abcdef0123456789abcdef}}\n" + extra
    )
    return path


def _prepare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "", backend: str = "native"
) -> Any:
    conns = tmp_path / "connections.yaml"
    conns.write_text(CONNECTIONS)
    monkeypatch.setenv(CONNECTIONS_ENV, str(conns))
    return ServiceClusterExecutor(backend).prepare(  # type: ignore[arg-type]
        load_polyaxonfile(_tensorboard(tmp_path, extra))
    )


async def _serve(
    k: Any, prepared: Any, cancel: threading.Event | None = None
) -> tuple[Any, list[str]]:
    lines: list[str] = []
    result = await asyncio.to_thread(
        serve_on_cluster,
        prepared,
        on_line=lambda _stream, line: lines.append(line),
        cancel_event=cancel,
        credentials=credentials(str(k.url)),
        settings=POOL,
        poll_interval=0.05,
    )
    return result, lines


def _first(k: Any, plural: str) -> dict[str, Any]:
    [key] = ever(k, plural)
    return dict(json.loads(json.dumps(k.objects[key].history[0].raw)))


async def test_tensorboard_runs_as_a_deployment_and_a_service_until_stopped(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    validate: Callable[[dict[str, Any]], None],
) -> None:
    """Both objects are created (valid, pool settings applied, the pod's globals rendered),
    the port-forward line is printed, the first running pod announces the service (what lets a
    DAG's dependents start), and stopping deletes both."""
    prepared = _prepare(tmp_path, monkeypatch)
    serving = threading.Event()
    on_serving(prepared.context.uuid, serving.set)
    cancel = threading.Event()
    try:
        async with service_cluster() as k:

            async def stop_once_serving() -> None:
                while not serving.is_set():
                    await asyncio.sleep(0.02)
                cancel.set()

            stopper = asyncio.create_task(stop_once_serving())
            result, lines = await asyncio.wait_for(_serve(k, prepared, cancel), 30)
            await stopper
            deployment, service = _first(k, "deployments"), _first(k, "services")
            left = live(k, "deployments") + live(k, "services")
    finally:
        forget_serving(prepared.context.uuid)
    assert result.status == "stopped", result.message
    assert left == []
    for manifest in (deployment, service):
        validate(manifest)
        assert api_server_rules(manifest) == []
        assert manifest["metadata"]["namespace"] == NAMESPACE
    name = deployment["metadata"]["name"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "viewer" and pod["restartPolicy"] == "Always"
    main = pod["containers"][0]
    assert main["image"] == "tensorflow/tensorflow:2.4.2"
    base = f"/services/v1/default/local/default/runs/{prepared.context.uuid}"
    assert "--port=6006" in main["args"] and f"--path_prefix={base}" in main["args"]
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"][0]["port"] == 6006
    text = "\n".join(lines)
    assert f"kubectl port-forward -n {NAMESPACE} svc/{name} 6006:6006" in text
    assert f"http://127.0.0.1:6006{base}/" in text
    assert f"deleted Deployment `{name}`" in text and f"deleted Service `{name}`" in text


async def test_a_service_is_stopped_and_deleted_at_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = _prepare(tmp_path, monkeypatch, "termination: {timeout: 1}\n", "kubeflow")
    async with service_cluster() as k:
        result, _ = await asyncio.wait_for(_serve(k, prepared), 30)
        left = live(k, "deployments") + live(k, "services")
    assert result.status == "stopped"
    assert "termination.timeout (1s)" in result.message
    assert left == []


async def test_an_image_that_cannot_be_pulled_fails_the_service_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = _prepare(tmp_path, monkeypatch)
    async with service_cluster("image_pull") as k:
        result, _ = await asyncio.wait_for(_serve(k, prepared), 30)
        left = live(k, "deployments") + live(k, "services")
    assert result.status == "failed"
    assert "ErrImagePull" in result.message or "image" in result.message.lower()
    assert left == []


async def test_a_service_without_an_image_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: web\nrun:\n  kind: service\n  ports: [8000]\n"
        "  container: {command: [python, -m, http.server]}\n"
    )
    with pytest.raises(PolyaxonfileError) as info:
        ServiceClusterExecutor("native").prepare(load_polyaxonfile(path))
    [problem] = info.value.problems
    assert problem.rule == "k8s_no_image"
    assert problem.format().startswith(f"{path}:")


async def test_both_backends_prepare_a_service_through_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conns = tmp_path / "connections.yaml"
    conns.write_text(CONNECTIONS)
    monkeypatch.setenv(CONNECTIONS_ENV, str(conns))
    register_service_executors()
    for backend in ("native", "kubeflow"):
        prepared = executor_for("service", backend).prepare(
            load_polyaxonfile(_tensorboard(tmp_path))
        )
        assert (prepared.run_kind, prepared.backend) == ("service", backend)
        kinds = [m["kind"] for m in prepared.manifests]  # type: ignore[attr-defined]
        assert kinds == ["Deployment", "Service"]


async def test_tensorboard_reads_the_directory_its_init_step_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub component's ``--logdir`` (under ``globals.artifacts_path``) is where its
    ``artifacts`` init step copies the run's outputs in the pod: the two must agree."""
    conns = tmp_path / "connections.yaml"
    conns.write_text(CONNECTIONS)
    monkeypatch.setenv(CONNECTIONS_ENV, str(conns))
    prepared = ServiceClusterExecutor("native").prepare(
        load_polyaxonfile(_tensorboard(tmp_path)), PrepareOptions()
    )
    [deployment] = [m for m in prepared.manifests if m["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    logdir = spec["containers"][0]["args"][0].removeprefix("--logdir=")
    assert logdir.endswith("/0123456789abcdef0123456789abcdef/outputs")
    [init] = spec["initContainers"]
    assert init["command"][-1].endswith(f'"{logdir}"'), init["command"]
