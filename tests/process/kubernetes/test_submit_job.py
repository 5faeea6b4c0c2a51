"""Submitting a ``kind: job`` op to Kubernetes: its Job run by the FAKE kubelet, stopped,
diagnosed, its outputs handed back (or refused when too big), nothing left behind.

kmock's emulator plays the API server, the fake operator the Job controller and the garbage
collector, the fake kubelet runs the pod's containers as local processes (see
``fake_cluster``): the wrapper and the log channel are really executed. Every Job created is
checked by the API server's rules (``api_rules``).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect.kubernetes._kubernetes import ClusterExecutor
from polyaxon_prefect.runtime import PrepareOptions, new_run_context
from tests.process.kubernetes.api_rules import check_manifest
from tests.process.kubernetes.fake_cluster import FakeKubelet, ever, fake_cluster, live
from tests.process.kubernetes.test_submit import POOL, _submit

pytestmark = [pytest.mark.asyncio, pytest.mark.cluster]

JOB = """\
version: 1.1
kind: component
name: {name}
outputs: [{{name: blob, type: str, isOptional: true}}]
run:
  kind: job
  container:
    image: busybox:1.36
    command: [sh, -c, '{script}']
"""


def _prepared(tmp_path: Path, name: str, script: str) -> Any:
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(name=name, script=script))
    context = new_run_context(name, "proj", artifacts_root=tmp_path / "artifacts")
    return ClusterExecutor("native").prepare(
        load_polyaxonfile(path), PrepareOptions(run_context=context)
    )


async def _gone(k: Any) -> None:
    for _ in range(100):
        if not live(k, "jobs") and not live(k, "pods"):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"left behind: {live(k, 'jobs')} {live(k, 'pods')}")


async def test_a_stopped_job_is_deleted_with_its_pod(tmp_path: Path) -> None:
    prepared = _prepared(tmp_path, "sleeper", "echo started; sleep 30")
    cancel = threading.Event()
    kubelet = FakeKubelet()
    async with fake_cluster(kubelet=kubelet) as k:

        async def cancel_once_running() -> None:
            while not kubelet.processes:
                await asyncio.sleep(0.02)
            cancel.set()

        canceller = asyncio.create_task(cancel_once_running())
        result, lines = await _submit(k, prepared, cancel=cancel)
        await canceller
        await _gone(k)
        (key,) = ever(k, "jobs")
        job = k.objects[key].history[0].raw
    assert result.status == "stopped"
    assert any("deleted Job" in line for _, line in lines)
    check_manifest(dict(job))
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == POOL.service_account_name
    process = next(iter(kubelet.processes.values()))
    assert process.returncode is not None, "the pod's process was killed with it"


async def test_outputs_too_big_for_the_log_fail_the_op_saying_so(tmp_path: Path) -> None:
    script = (
        'printf "{\\"blob\\": \\"%s\\"}" "$(head -c 1100000 /dev/zero | tr "\\\\0" x)" '
        '> "$POLYAXON_PREFECT_RUN_OUTPUTS_PATH/outputs.json"'
    )
    prepared = _prepared(tmp_path, "big", f"mkdir -p $POLYAXON_PREFECT_RUN_OUTPUTS_PATH; {script}")
    async with fake_cluster(kubelet=FakeKubelet()) as k:
        result, _lines = await _submit(k, prepared)
        await _gone(k)
    assert result.status == "failed"
    assert "over the 1024 KiB its log hands back" in result.message


async def test_the_handback_lines_are_not_shown_and_metrics_come_back(tmp_path: Path) -> None:
    script = (
        "mkdir -p $POLYAXON_PREFECT_RUN_OUTPUTS_PATH; echo training; "
        'echo {\\"loss\\": 0.5} > $POLYAXON_PREFECT_RUN_OUTPUTS_PATH/metrics.jsonl; '
        'echo {\\"blob\\": \\"b\\"} > $POLYAXON_PREFECT_RUN_OUTPUTS_PATH/outputs.json'
    )
    prepared = _prepared(tmp_path, "small", script)
    async with fake_cluster(kubelet=FakeKubelet()) as k:
        result, lines = await _submit(k, prepared)
        await _gone(k)
    assert result.status == "succeeded", result.message
    assert result.outputs == {"blob": "b"} and result.metrics == {"loss": 0.5}
    shown = [line for _, line in lines if line.startswith("[job]")]
    assert shown == ["[job] training"]
    assert (prepared.context.run_outputs_path / "outputs.json").is_file()


async def test_no_cluster_configured_is_one_clear_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from polyaxon_prefect.prefect.kubernetes._kubernetes import run_on_cluster

    prepared = _prepared(tmp_path, "nowhere", "true")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("POLYAXON_PREFECT_K8S_CREDENTIALS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    # kubernetes-asyncio reads KUBECONFIG once, at import: an earlier test of this process
    # may have imported it with another test's kubeconfig set
    from kubernetes_asyncio.config import kube_config

    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", "~/.kube/config")
    result = await asyncio.to_thread(run_on_cluster, prepared, settings=POOL)
    assert result.status == "failed"
    assert result.message.startswith("cannot reach a Kubernetes cluster: ")
    assert "set KUBECONFIG" in result.message
