"""What the cluster executor submits for scheduling (pure): GPU limits on every pod, the Kueue
queue label on each workload (the file's or the pool's), Jobs that do not count a disrupted
pod against ``backoffLimit``, and a new attempt told its predecessor's outputs path; each
manifest validated strictly and by the API server's rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.kubernetes import (
    KUEUE_QUEUE_LABEL,
    PREVIOUS_OUTPUTS_ENV,
    PoolSettings,
    build_manifests,
    disruption_budget,
    pending_reason,
    resubmission,
    schedule_manifests,
)
from polyaxon_prefect.loading import load_polyaxonfile
from tests.process.kubernetes.api_rules import check_manifest, pod_specs

GPU = {"requests": {"nvidia.com/gpu": 2}}


def _loaded(tmp_path: Path, run: dict[str, Any], labels: dict[str, str] | None = None) -> Any:
    if labels and run["kind"] == "job":
        run = {**run, "environment": {"labels": labels}}
    elif labels:  # a distributed op's environment is its replicas'
        run = {**run, "master": {**run["master"], "environment": {"labels": labels}}}
    doc = {"version": 1.1, "kind": "component", "name": "train", "run": run}
    path = tmp_path / "op.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_polyaxonfile(path)


def _job(restart: str | None = None) -> dict[str, Any]:
    container = {"image": "img:1", "command": ["python", "t.py"], "resources": GPU}
    run: dict[str, Any] = {"kind": "job", "container": container}
    if restart:
        run["environment"] = {"restartPolicy": restart}
    return run


def _pytorch() -> dict[str, Any]:
    replica = {"container": {"image": "img:1", "command": ["python", "t.py"], "resources": GPU}}
    return {
        "kind": "pytorchjob",
        "master": {"replicas": 1, **replica},
        "worker": {"replicas": 2, **replica},
    }


def _gpu_limits(manifest: dict[str, Any]) -> list[str]:
    return [
        str(((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu"))
        for _, pod in pod_specs(manifest)
        for c in pod.get("containers") or []
    ]


@pytest.mark.parametrize(
    ("run", "backend"), [(_job(), "native"), (_pytorch(), "kubeflow"), (_pytorch(), "native")]
)
def test_every_pod_has_its_gpu_limit_and_every_workload_the_pool_queue(
    tmp_path: Path, run: dict[str, Any], backend: Any
) -> None:
    manifests = build_manifests(_loaded(tmp_path, run), backend=backend)
    submitted = schedule_manifests(
        manifests, PoolSettings.from_variables({"kueue_queue_name": "gpus"}).queue
    )
    workloads = [m for m in submitted if m["kind"] != "Service"]
    assert workloads
    for manifest in workloads:
        check_manifest(manifest)
        assert manifest["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpus"
        limits = _gpu_limits(manifest)
        assert limits and all(limit == "2" for limit in limits), limits
    for service in (m for m in submitted if m["kind"] == "Service"):
        assert KUEUE_QUEUE_LABEL not in service["metadata"]["labels"]


def test_the_files_queue_label_wins_over_the_pools(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, _pytorch(), labels={KUEUE_QUEUE_LABEL: "team-a"})
    (cr,) = schedule_manifests(build_manifests(loaded, backend="kubeflow"), "gpus")
    check_manifest(cr)
    assert cr["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "team-a"
    assert "schedulingPolicy" not in cr["spec"].get("runPolicy", {})  # Volcano's, not Kueue's


def test_no_queue_named_no_label(tmp_path: Path) -> None:
    (job,) = schedule_manifests(build_manifests(_loaded(tmp_path, _job())), None)
    assert KUEUE_QUEUE_LABEL not in job["metadata"]["labels"]


def test_a_jobs_disrupted_pods_are_not_counted_against_backoff_limit(tmp_path: Path) -> None:
    (job,) = schedule_manifests(build_manifests(_loaded(tmp_path, _job())), None)
    check_manifest(job)
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]
    again = schedule_manifests([job], None)  # applied twice: one rule
    assert len(again[0]["spec"]["podFailurePolicy"]["rules"]) == 1


def test_no_pod_failure_policy_where_kubernetes_refuses_one(tmp_path: Path) -> None:
    """Kubernetes allows ``podFailurePolicy`` only with ``restartPolicy: Never``: a job that
    restarts ``OnFailure`` is resubmitted by the executor instead."""
    (job,) = schedule_manifests(build_manifests(_loaded(tmp_path, _job("OnFailure"))), None)
    check_manifest(job)
    assert "podFailurePolicy" not in job["spec"]


def test_a_new_attempt_is_told_the_previous_outputs_path(tmp_path: Path) -> None:
    manifests = build_manifests(_loaded(tmp_path, _pytorch()), backend="kubeflow")
    (cr,) = resubmission(
        [
            {
                **manifests[0],
                "status": {"x": 1},
                "metadata": {**manifests[0]["metadata"], "uid": "u"},
            }
        ],
        "/plx-context/p/u/outputs",
    )
    check_manifest(cr)
    assert "status" not in cr and "uid" not in cr["metadata"]
    for _, pod in pod_specs(cr):
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert env[PREVIOUS_OUTPUTS_ENV] == "/plx-context/p/u/outputs"
    (twice,) = resubmission([cr], "/other")
    names = [e["name"] for _, p in pod_specs(twice) for e in p["containers"][0]["env"]]
    assert names.count(PREVIOUS_OUTPUTS_ENV) == len(list(pod_specs(twice)))


def test_the_schedulers_condition_is_a_pending_reason() -> None:
    status = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            }
        ],
    }
    reason = pending_reason([], status)
    assert reason is not None
    assert reason.startswith("pending: Unschedulable: 0/3 nodes are available: 3 Insufficient")
    assert pending_reason([], {"phase": "Pending"}) is None


@pytest.mark.parametrize(("value", "budget"), [("", 3), ("0", 0), ("5", 5), ("x", 3)])
def test_the_disruption_budget(value: str, budget: int) -> None:
    assert disruption_budget({"POLYAXON_PREFECT_PREEMPTION_RETRIES": value}) == budget


def test_the_tracking_api_reads_the_previous_outputs_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyaxon_prefect import tracking

    assert tracking.ENV_PREVIOUS_OUTPUTS_PATH == PREVIOUS_OUTPUTS_ENV
    monkeypatch.delenv(PREVIOUS_OUTPUTS_ENV, raising=False)
    assert tracking.get_previous_outputs_path() is None
    monkeypatch.setenv(PREVIOUS_OUTPUTS_ENV, "/plx-context/a/b/outputs")
    assert tracking.get_previous_outputs_path() == "/plx-context/a/b/outputs"
