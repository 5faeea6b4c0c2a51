"""Scheduling of a ``kind: job`` op's pod on the FAKE cluster: why it is pending said once,
a preempted pod run again on the disruption budget (never ``maxRetries``'), the new attempt
told where the previous one's outputs are.

kmock's emulator plays the API server; the fake operator the scheduler (a pod held
``Unschedulable`` for want of GPUs, pods preempted) and the Job controller (a pod whose
disruption the Job's ``podFailurePolicy`` ignores is started again, else it counts against
``backoffLimit``); the fake kubelet really runs the pod's command (see ``fake_cluster``).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.kubernetes import PREVIOUS_OUTPUTS_ENV
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect.kubernetes._kubernetes import ClusterExecutor
from polyaxon_prefect.runtime import PrepareOptions, new_run_context
from tests.process.kubernetes.api_rules import check_manifest
from tests.process.kubernetes.fake_cluster import (
    GPU_SHORTAGE,
    FakeKubelet,
    ever,
    fake_cluster,
    live,
)
from tests.process.kubernetes.test_submit import _submit

pytestmark = [pytest.mark.asyncio, pytest.mark.cluster]

JOB = """\
version: 1.1
kind: component
name: {name}
run:
  kind: job
  environment: {{restartPolicy: {restart}}}
  container:
    image: busybox:1.36
    command: [sh, -c, 'echo "previous=${{{previous}:-none}}"']
    resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def _prepared(tmp_path: Path, name: str, restart: str = "Never") -> Any:
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(name=name, restart=restart, previous=PREVIOUS_OUTPUTS_ENV))
    context = new_run_context(name, "proj", artifacts_root=tmp_path / "artifacts")
    return ClusterExecutor("native").prepare(
        load_polyaxonfile(path), PrepareOptions(run_context=context)
    )


def _created(lines: list[tuple[str, str]]) -> list[str]:
    return [line for _, line in lines if line.startswith("created Job")]


async def test_a_pod_pending_for_gpus_says_why_once_then_runs(tmp_path: Path) -> None:
    kubelet = FakeKubelet()
    kubelet.unschedulable = threading.Event()
    prepared = _prepared(tmp_path, "waits")
    async with fake_cluster(kubelet=kubelet) as k:
        submitted = asyncio.create_task(_submit(k, prepared))
        for _ in range(500):  # until the scheduler said why (the first run imports a lot)
            pods = [k.objects[key].raw for key in live(k, "pods")]
            if pods and pods[0]["status"].get("conditions"):
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # about 10 polls while it is pending
        assert not submitted.done()
        kubelet.unschedulable.set()
        result, lines = await submitted
    assert result.status == "succeeded", result.message
    text = [line for _, line in lines]
    said = [line for line in text if GPU_SHORTAGE in line and line.startswith("[job] pending:")]
    assert said == [
        f"[job] pending: Unschedulable: {GPU_SHORTAGE} (no node has the GPUs it asks for "
        "free; it waits for them)"
    ], text
    assert "[job] previous=none" in text


async def test_a_preempted_pod_is_started_again_without_spending_max_retries(
    tmp_path: Path,
) -> None:
    """The Job's podFailurePolicy ignores the disruption: the Job controller starts a new pod,
    ``backoffLimit`` (0: no maxRetries) is not spent, the run succeeds as one attempt."""
    kubelet = FakeKubelet()
    kubelet.preempt = 1
    prepared = _prepared(tmp_path, "preempted")
    async with fake_cluster(kubelet=kubelet) as k:
        result, lines = await _submit(k, prepared)
        (key,) = ever(k, "jobs")
        job = [dict(v.raw) for v in k.objects[key].history if v is not None]
    assert result.status == "succeeded", result.message
    assert len(_created(lines)) == 1
    check_manifest(job[0])
    assert job[0]["spec"]["backoffLimit"] == 0
    assert job[-1]["status"]["conditions"] == [{"type": "Complete", "status": "True"}]
    text = "\n".join(line for _, line in lines)
    assert "preempted: default-scheduler: preempting" in text
    assert "running it again (1 of 3 disruption retries, maxRetries not spent)" in text
    assert list(kubelet.envs) == [f"{prepared.manifests[0]['metadata']['name']}-00001"]


async def test_a_run_failed_by_a_preemption_is_submitted_again_with_the_previous_outputs(
    tmp_path: Path,
) -> None:
    """``restartPolicy: OnFailure`` (no podFailurePolicy allowed): the preemption fails the
    Job; the executor deletes it and submits the run again, told the outputs path."""
    kubelet = FakeKubelet()
    kubelet.preempt = 1
    prepared = _prepared(tmp_path, "resubmitted", restart="OnFailure")
    async with fake_cluster(kubelet=kubelet) as k:
        result, lines = await _submit(k, prepared)
        (key,) = ever(k, "jobs")
        second = dict(k.objects[key].history[0].raw)
    assert result.status == "succeeded", result.message
    created = _created(lines)
    assert len(created) == 2 and created[1].endswith("(attempt 2)"), lines
    check_manifest(second)
    assert second["spec"]["backoffLimit"] == 0, "maxRetries not spent"
    outputs = prepared.handback.outputs_dir
    (env,) = kubelet.envs.values()  # the pod of attempt 2 (attempt 1's never ran)
    assert env[PREVIOUS_OUTPUTS_ENV] == outputs
    (said,) = [line for _, line in lines if line.startswith("[job] previous=")]
    assert said.endswith(outputs)  # as the fake kubelet maps the pod's paths


async def test_past_the_disruption_budget_the_run_fails_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLYAXON_PREFECT_PREEMPTION_RETRIES", "1")
    kubelet = FakeKubelet()
    kubelet.preempt = 2
    prepared = _prepared(tmp_path, "unlucky")
    async with fake_cluster(kubelet=kubelet) as k:
        result, lines = await _submit(k, prepared)
    assert len(_created(lines)) == 1
    assert result.status == "failed"
    assert result.message.startswith("attempt 2 was preempted")
    assert result.message.endswith("1 disruption retries spent")
