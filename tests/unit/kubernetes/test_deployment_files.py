"""``deployments/kubernetes/``: the RBAC manifest and the work pool's base job template.

Both validated strictly (``kubernetes-validate``); the Role is checked against every call the
submitter makes, so a new call without its permission fails here, not in a team's cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import yaml

from polyaxon_prefect.kubernetes._cluster import CRD_PLURALS, PoolSettings, job_variables

DEPLOYMENTS = Path(__file__).resolve().parents[3] / "deployments" / "kubernetes"

# (API group, resource, verb) for every call of polyaxon_prefect.prefect.kubernetes._kubernetes
CALLS = (
    [
        ("kubeflow.org", plural, verb)
        for plural in CRD_PLURALS.values()
        for verb in ("create", "get", "delete")
    ]
    + [("batch", "jobs", verb) for verb in ("create", "get", "delete")]
    + [("", "services", verb) for verb in ("create", "get", "delete")]
    + [("", "pods", "list"), ("", "pods", "get"), ("", "pods/log", "get")]
    + [("", "events", "list")]
)


def test_rbac_is_valid_and_grants_every_call_the_submitter_makes() -> None:
    documents = list(yaml.safe_load_all((DEPLOYMENTS / "rbac.yaml").read_text()))
    for document in documents:
        kubernetes_validate.validate(document, "1.30", strict=True)
    (role,) = [d for d in documents if d["kind"] == "Role"]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    missing = [call for call in CALLS if call not in granted]
    assert not missing
    (binding,) = [d for d in documents if d["kind"] == "RoleBinding"]
    (account,) = [d for d in documents if d["kind"] == "ServiceAccount"]
    assert binding["subjects"][0]["name"] == account["metadata"]["name"]


def test_the_base_job_template_defaults_leave_replicas_alone() -> None:
    template = json.loads((DEPLOYMENTS / "base-job-template.json").read_text())
    properties = template["variables"]["properties"]
    assert properties["gpu_count"]["default"] is None, "no GPU unless asked, not 0"
    settings = PoolSettings.from_variables(job_variables(template))
    assert settings == PoolSettings(namespace="default")
    chosen = job_variables(
        template,
        {"node_selector": {"pool": "gpu"}, "image_pull_secrets": [{"name": "reg"}]},
        {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
    )
    settings = PoolSettings.from_variables(chosen)
    assert settings.node_selector == {"pool": "gpu"}
    assert settings.image_pull_secrets == ("reg",)
    assert settings.tolerations[0]["key"] == "nvidia.com/gpu"
    assert properties["kueue_queue_name"]["default"] is None, "no Kueue unless named"
    queued = job_variables(template, {"kueue_queue_name": "gpus"})
    assert PoolSettings.from_variables(queued).queue == "gpus"
