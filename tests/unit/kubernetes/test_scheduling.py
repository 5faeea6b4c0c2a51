"""Cluster scheduling decisions from recorded API objects: Kueue label, why pending, and
preemption/eviction told apart from a code failure."""

from __future__ import annotations

from polyaxon_prefect.kubernetes._scheduling import (
    KUEUE_QUEUE_LABEL,
    PREVIOUS_OUTPUTS_ENV,
    Disruption,
    disruption,
    pending_reason,
    previous_attempt_env,
    queue_labels,
    retry_after_disruption,
)

GPU_EVENT = {
    "type": "Warning",
    "reason": "FailedScheduling",
    "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.  preemption: 0/3 nodes",
    "lastTimestamp": "2026-01-01T10:00:05Z",
}


def test_the_files_queue_label_wins_over_the_pools():
    assert queue_labels({KUEUE_QUEUE_LABEL: "team-a"}, "default") == {KUEUE_QUEUE_LABEL: "team-a"}
    assert queue_labels({"app": "x"}, "gpu-queue") == {KUEUE_QUEUE_LABEL: "gpu-queue"}
    assert queue_labels(None, None) == {}


def test_insufficient_gpus_is_the_pending_reason_in_one_line():
    older = {**GPU_EVENT, "reason": "FailedMount", "lastTimestamp": "2026-01-01T09:00:00Z"}
    line = pending_reason([older, GPU_EVENT, {"reason": "Scheduled", "message": "ok"}])
    assert line is not None and "\n" not in line
    assert line.startswith("pending: FailedScheduling: 0/3 nodes are available: 3 Insufficient")
    assert "waits for them" in line


def test_an_image_that_cannot_be_pulled_comes_first():
    status = {
        "containerStatuses": [
            {
                "name": "main",
                "state": {
                    "waiting": {"reason": "ImagePullBackOff", "message": "Back-off\n pulling"}
                },
            }
        ]
    }
    line = pending_reason([GPU_EVENT], status)
    assert line == "pending: container `main` ImagePullBackOff: Back-off pulling"
    assert pending_reason([{"reason": "Pulled"}]) is None


def test_preemption_eviction_and_node_loss_are_disruptions_and_oom_is_not():
    preempted = {
        "conditions": [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": "Preempted in order to admit critical pod",
            }
        ]
    }
    assert disruption(preempted) == Disruption(
        "preempted", "Preempted in order to admit critical pod"
    )
    assert disruption({"reason": "Evicted", "message": "low on memory"}) == Disruption(
        "evicted", "low on memory"
    )
    lost = {
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
        ]
    }
    assert disruption(lost) is not None and disruption(lost).what == "node lost"  # type: ignore[union-attr]
    oom = {
        "reason": None,
        "containerStatuses": [{"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}],
    }
    assert disruption(oom) is None


def test_a_disruption_is_retried_on_its_own_budget():
    taken = Disruption("preempted", "by a higher priority pod")
    again = retry_after_disruption(taken, attempts=1, budget=2)
    assert again.retry and "maxRetries not spent" in again.message
    assert not retry_after_disruption(taken, attempts=3, budget=2).retry
    assert previous_attempt_env("/runs/a/outputs") == {PREVIOUS_OUTPUTS_ENV: "/runs/a/outputs"}
    assert previous_attempt_env(None) == {}
