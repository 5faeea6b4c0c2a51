"""The pure decisions of a Kubernetes submission: pool settings, run state, replica names,
what an API error means (no cluster, no client: plain dicts in, plain answers out)."""

from __future__ import annotations

from typing import Any

import pytest

from polyaxon_prefect.kubernetes._cluster import (
    PoolSettings,
    api_error_message,
    api_target,
    apply_pool_settings,
    kubeflow_state,
    native_state,
    pod_diagnosis_message,
    replica_name,
)


def _job(group: str, *conditions: str, name: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name or f"run-{group}", "labels": {"polyaxon-prefect/replica": group}},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


def test_pool_settings_fill_only_what_the_file_leaves_open() -> None:
    settings = PoolSettings.from_variables(
        {
            "namespace": "ml",
            "service_account_name": "runner",
            "image_pull_secrets": ["regcred"],
            "node_selector": {"gpu": "a100"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "image": "ignored: the Polyaxonfile names its images",
        }
    )
    manifest = {
        "kind": "Job",
        "metadata": {"name": "x"},
        "spec": {"template": {"spec": {"nodeSelector": {"own": "yes"}}}},
    }
    (out,) = apply_pool_settings([manifest], settings, namespace=None)
    pod = out["spec"]["template"]["spec"]
    assert out["metadata"]["namespace"] == "ml"
    assert pod["nodeSelector"] == {"own": "yes"}
    assert pod["serviceAccountName"] == "runner"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert "namespace" not in manifest["metadata"], "the input is not modified"
    (own,) = apply_pool_settings([manifest], settings, namespace="theirs")
    assert own["metadata"]["namespace"] == "theirs"
    (bare,) = apply_pool_settings([manifest], PoolSettings(), namespace=None)
    assert bare["metadata"]["namespace"] == "default"


def test_kubeflow_state_follows_the_true_condition() -> None:
    running = {"status": {"conditions": [{"type": "Running", "status": "True"}]}}
    assert kubeflow_state(running).phase == "running"
    failed = {
        "status": {
            "conditions": [
                {"type": "Running", "status": "False"},
                {"type": "Failed", "status": "True", "reason": "JobFailed", "message": "boom"},
            ]
        }
    }
    assert kubeflow_state(failed).phase == "failed"
    assert kubeflow_state(failed).message == "JobFailed: boom"
    assert kubeflow_state({}).phase == "running"


@pytest.mark.parametrize(
    ("kind", "jobs", "phase"),
    [
        ("tfjob", [_job("chief", "Complete"), _job("ps"), _job("worker")], "succeeded"),
        ("tfjob", [_job("chief"), _job("ps"), _job("worker", "Complete")], "running"),
        (
            "tfjob",
            [_job("ps"), _job("worker", "Complete"), _job("worker", "Complete")],
            "succeeded",
        ),
        ("tfjob", [_job("ps"), _job("worker", "Complete"), _job("worker")], "running"),
        ("pytorchjob", [_job("master"), _job("worker", "Failed")], "failed"),
        ("pytorchjob", [_job("master", "SuccessCriteriaMet"), _job("worker")], "succeeded"),
    ],
)
def test_native_state_is_the_operators_rule(kind: str, jobs: list[Any], phase: str) -> None:
    assert native_state(kind, jobs).phase == phase


def test_a_failed_native_job_is_named() -> None:
    state = native_state("pytorchjob", [_job("worker", "Failed", name="run-worker-2")])
    assert state.message.startswith("Job `run-worker-2` failed")


def test_replica_names() -> None:
    kubeflow = {
        "metadata": {
            "name": "p",
            "labels": {
                "polyaxon-prefect/replica": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        }
    }
    assert replica_name(kubeflow) == "worker-1"
    native = {
        "metadata": {
            "name": "p",
            "labels": {
                "polyaxon-prefect/replica": "worker",
                "batch.kubernetes.io/job-completion-index": "2",
            },
            "annotations": {"polyaxon-prefect/replica-offset": "3"},
        }
    }
    assert replica_name(native) == "worker-5"
    assert replica_name({"metadata": {"name": "lonely"}}) == "lonely"


def test_api_targets() -> None:
    crd = api_target(
        {"apiVersion": "kubeflow.org/v1", "kind": "XGBoostJob", "metadata": {"name": "a"}}
    )
    assert (crd.group, crd.version, crd.plural, crd.custom) == (
        "kubeflow.org",
        "v1",
        "xgboostjobs",
        True,
    )
    job = api_target({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b"}})
    assert not job.custom
    service = api_target({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "c"}})
    assert (service.group, service.plural) == ("", "services")


def test_api_error_messages_say_what_to_do() -> None:
    crd = api_target({"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "a"}})
    missing = api_error_message(404, "not found", crd, verb="create", namespace="ns")
    assert "install the Kubeflow Training Operator or use backend: native" in missing
    forbidden = api_error_message(403, "no", crd, verb="create", namespace="ns")
    assert "forbidden to create mpijobs in namespace `ns`" in forbidden
    assert "rbac.yaml" in forbidden
    assert "KUBECONFIG" in api_error_message(None, "refused", crd, verb="create", namespace="ns")
    assert "already exists" in api_error_message(409, "", crd, verb="create", namespace="ns")


def test_an_unschedulable_gpu_pod_gets_a_gpu_hint() -> None:
    text = pod_diagnosis_message(
        "worker-0",
        "Unschedulable.InsufficientResources",
        "Pod cannot be scheduled",
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        "generic",
    )
    assert text.startswith("[worker-0] Unschedulable")
    assert "nvidia.com/gpu" in text
    assert "lower the replica's GPU request" in text
