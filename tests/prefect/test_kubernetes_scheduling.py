"""A ``kind: job`` op whose pod the cluster cannot place yet, through Prefect: its run is
``queued`` with the scheduler's reason as its message (what ``get``/``ls`` show) while the pod
is pending, then runs and succeeds once the (fake) scheduler places it.

The cluster is FAKE (tests/process/kubernetes/fake_cluster.py: kmock's emulator, a fake
operator holding the pod ``Unschedulable`` for want of GPUs, a fake kubelet that really runs
the pod's command); the Prefect server, the flow run and its states are real.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import polyaxon_prefect
from polyaxon_prefect.prefect.cli._runs_cli import find_run
from polyaxon_prefect.prefect.kubernetes._gpu_wait import POD_WAIT_STATE_NAME
from polyaxon_prefect.prefect.kubernetes._kubernetes import POLL_ENV
from tests.prefect.test_kubernetes_run import cluster_in_background
from tests.process.kubernetes.fake_cluster import GPU_SHORTAGE, FakeKubelet, kubeconfig

pytestmark = [pytest.mark.cluster]

JOB = """\
version: 1.1
kind: component
name: gpu-train
run:
  kind: job
  container:
    image: busybox:1.36
    command: [sh, -c, 'echo trained']
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def _waiting_runs() -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateName,
    )

    waiting = FlowRunFilter(
        state=FlowRunFilterState(name=FlowRunFilterStateName(any_=[POD_WAIT_STATE_NAME]))
    )
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["gpu-train"])),
            flow_run_filter=waiting,
            limit=50,
        )
    return [r for r in runs if r.state is not None and r.state.name == POD_WAIT_STATE_NAME]


def _waiting_run(before: set[str]) -> Any:
    # Filtered on the server by flow name and state name: the session's server holds hundreds
    # of runs by the time this test runs in the full suite (an unfiltered page of 20, sorted by
    # a random UUID, need not hold this one), and an earlier test's run may have been left in
    # the same waiting state (`before`, read before this run started, names those).
    deadline = time.monotonic() + 120  # a loaded CI machine starts the flow slowly
    while time.monotonic() < deadline:
        found = [r for r in _waiting_runs() if str(r.id) not in before]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError("no flow run became queued for its pod")


def test_a_job_pending_for_gpus_is_queued_with_the_reason_then_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubelet = FakeKubelet()
    kubelet.unschedulable = threading.Event()
    path = tmp_path / "gpu.yaml"
    path.write_text(JOB)
    with cluster_in_background(kubelet=kubelet) as k:
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump(kubeconfig(str(k.url))))
        monkeypatch.setenv("KUBECONFIG", str(config))
        monkeypatch.setenv(POLL_ENV, "0.05")
        outcome: dict[str, Any] = {}
        before = {str(r.id) for r in _waiting_runs()}
        runner = threading.Thread(
            target=lambda: outcome.update(result=polyaxon_prefect.run(path, backend="native"))
        )
        began = time.monotonic()
        runner.start()
        try:
            waiting = _waiting_run(before)
            seen_pending = time.monotonic()
            _api, shown = find_run(str(waiting.id))  # as `get --json` shows it
            assert shown["status"] == "queued"
            assert shown["message"].startswith("[job] pending: Unschedulable: ")
            assert GPU_SHORTAGE in shown["message"]
        finally:
            released = time.monotonic()
            kubelet.unschedulable.set()
            runner.join(180)
            ended = time.monotonic()
    result = outcome["result"]
    assert result.status == "succeeded", result.message
    # 1 GPU x the time its pod was placed: not the time the cluster left it pending
    assert result.gpu_hours is not None and result.gpu_hours > 0
    assert result.gpu_hours * 3600 <= (ended - began) - (released - seen_pending)
    _api, shown = find_run(str(waiting.id))
    assert shown["status"] == "succeeded"
