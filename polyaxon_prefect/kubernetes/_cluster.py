"""What a submitter needs to know about manifests and the objects a cluster returns (pure).

The Prefect layer's Kubernetes executor talks to the API server; everything it decides is
here, as functions of plain dicts, so it is tested without a cluster: which API an object goes
to, how a work pool's settings fill what the Polyaxonfile leaves open, when a run is over
(Kubeflow conditions; for native Jobs, the operator's rule: the chief/master decides, else
every worker), which replica a pod is, and what an API error means for the user.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from polyaxon_prefect.specs import main_replica

from ._names import ANNOTATION_OFFSET, LABEL_REPLICA, LABEL_RUN

__all__ = [
    "CRD_PLURALS",
    "ApiTarget",
    "PoolSettings",
    "RunState",
    "api_error_message",
    "api_target",
    "apply_pool_settings",
    "exit_diagnosis",
    "job_variables",
    "kubeflow_state",
    "native_state",
    "pod_diagnosis_message",
    "pod_specs",
    "replica_name",
    "run_selector",
]

CRD_PLURALS = {
    "TFJob": "tfjobs",
    "PyTorchJob": "pytorchjobs",
    "MPIJob": "mpijobs",
    "MXJob": "mxjobs",
    "XGBoostJob": "xgboostjobs",
    "PaddleJob": "paddlejobs",
}
"""The URL plural of each Kubeflow Training Operator kind."""

_KUBEFLOW_INDEX = "training.kubeflow.org/replica-index"
_JOB_INDEX = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class ApiTarget:
    """Where an object is created: a custom resource (``group``/``version``/``plural``) or a
    built-in ``Job`` or ``Service``."""

    kind: str
    name: str
    group: str = ""
    version: str = "v1"
    plural: str = ""

    @property
    def custom(self) -> bool:
        return bool(self.group) and self.group != "batch"

    def describe(self) -> str:
        return f"{self.kind} `{self.name}`"


def api_target(manifest: Mapping[str, Any]) -> ApiTarget:
    """The API ``manifest`` is created through."""
    group, _, version = str(manifest.get("apiVersion", "v1")).rpartition("/")
    kind = str(manifest.get("kind", ""))
    name = str(manifest.get("metadata", {}).get("name", ""))
    plural = CRD_PLURALS.get(kind) or f"{kind.lower()}s"
    return ApiTarget(kind, name, group, version, plural)


def run_selector(manifests: Sequence[Mapping[str, Any]]) -> str:
    """The label selector of every pod of the run the manifests describe."""
    labels = manifests[0].get("metadata", {}).get("labels", {}) if manifests else {}
    return f"{LABEL_RUN}={labels.get(LABEL_RUN, '')}"


def pod_specs(manifest: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pod template's ``spec`` in ``manifest`` (a Job's, or each replica group's of a
    Kubeflow resource); a Service has none."""
    spec = manifest.get("spec") or {}
    template = spec.get("template")
    if isinstance(template, dict):
        yield template.setdefault("spec", {})
    for key, groups in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(groups, dict):
            for group in groups.values():
                yield group.setdefault("template", {}).setdefault("spec", {})


@dataclass(frozen=True)
class PoolSettings:
    """What a team sets once on its Kubernetes work pool (base job template) or deployment
    (job variables), applied to every replica the Polyaxonfile leaves open."""

    namespace: str | None = None
    service_account_name: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    queue: str | None = None
    """The Kueue LocalQueue of the pool's runs (job variable ``kueue_queue_name``): the
    ``kueue.x-k8s.io/queue-name`` label of each workload the file does not label itself."""

    @classmethod
    def from_variables(cls, variables: Mapping[str, Any]) -> PoolSettings:
        """From job variables (``namespace``, ``service_account_name``,
        ``image_pull_secrets``, ``node_selector``, ``tolerations``, ``kueue_queue_name``);
        unknown keys ignored."""
        secrets = variables.get("image_pull_secrets") or ()
        if isinstance(secrets, str):
            secrets = [secrets]
        return cls(
            namespace=variables.get("namespace") or None,
            service_account_name=variables.get("service_account_name") or None,
            image_pull_secrets=tuple(
                s["name"] if isinstance(s, Mapping) else str(s) for s in secrets
            ),
            node_selector=dict(variables.get("node_selector") or {}),
            tolerations=tuple(variables.get("tolerations") or ()),
            queue=str(variables.get("kueue_queue_name") or "") or None,
        )


def job_variables(
    base_job_template: Mapping[str, Any], *overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A flow run's job variables as its worker sees them: the work pool's base job template
    defaults, then each of ``overrides`` (the deployment's, then the flow run's) on top."""
    properties = (base_job_template.get("variables") or {}).get("properties") or {}
    variables = {k: v["default"] for k, v in properties.items() if "default" in v}
    for override in overrides:
        variables.update(override or {})
    return variables


def apply_pool_settings(
    manifests: Sequence[Mapping[str, Any]], settings: PoolSettings, *, namespace: str | None
) -> list[dict[str, Any]]:
    """Copies of ``manifests`` in ``namespace`` (the file's; else the pool's; else
    ``default``) with the pool's settings on each pod where the Polyaxonfile set none."""
    chosen = namespace or settings.namespace or "default"
    result = []
    for manifest in manifests:
        item = copy.deepcopy(dict(manifest))
        item.setdefault("metadata", {})["namespace"] = chosen
        for pod in pod_specs(item):
            if settings.service_account_name:
                pod.setdefault("serviceAccountName", settings.service_account_name)
            if settings.image_pull_secrets and not pod.get("imagePullSecrets"):
                pod["imagePullSecrets"] = [{"name": n} for n in settings.image_pull_secrets]
            if settings.node_selector and not pod.get("nodeSelector"):
                pod["nodeSelector"] = dict(settings.node_selector)
            if settings.tolerations and not pod.get("tolerations"):
                pod["tolerations"] = [dict(t) for t in settings.tolerations]
        result.append(item)
    return result


Phase = Literal["running", "succeeded", "failed"]


@dataclass(frozen=True)
class RunState:
    """Where a submitted run is: still ``running``, or over (``succeeded``/``failed``)."""

    phase: Phase
    message: str = ""

    @property
    def done(self) -> bool:
        return self.phase != "running"


def _true_conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return {
        str(c.get("type")): c
        for c in conditions
        if isinstance(c, Mapping) and str(c.get("status")) == "True"
    }


def _condition_text(condition: Mapping[str, Any]) -> str:
    reason = condition.get("reason") or condition.get("type")
    message = condition.get("message") or ""
    return f"{reason}: {message}" if message else str(reason)


def kubeflow_state(obj: Mapping[str, Any]) -> RunState:
    """A Training Operator resource's state from its ``status.conditions``."""
    true = _true_conditions(obj)
    if "Failed" in true:
        return RunState("failed", _condition_text(true["Failed"]))
    if "Succeeded" in true:
        return RunState("succeeded", _condition_text(true["Succeeded"]))
    return RunState("running")


def _job_state(job: Mapping[str, Any]) -> Phase:
    true = _true_conditions(job)
    if "Failed" in true or "FailureTarget" in true:
        return "failed"
    if "Complete" in true or "SuccessCriteriaMet" in true:
        return "succeeded"
    return "running"


def native_state(kind: str, jobs: Sequence[Mapping[str, Any]]) -> RunState:
    """The state of a native run from its Indexed Jobs, by the operator's rule: any failed Job
    fails the run; it succeeds when the main replica's Jobs complete (chief/master), or, with
    no such replica, when every worker's do (parameter servers never finish on their own)."""
    by_group: dict[str, list[Phase]] = {}
    for job in jobs:
        group = str(job.get("metadata", {}).get("labels", {}).get(LABEL_REPLICA, ""))
        state = _job_state(job)
        if state == "failed":
            true = _true_conditions(job)
            condition = true.get("Failed") or true.get("FailureTarget") or {}
            name = job.get("metadata", {}).get("name", group)
            return RunState("failed", f"Job `{name}` failed: {_condition_text(condition)}")
        by_group.setdefault(group, []).append(state)
    main = main_replica(kind)
    deciding = [main] if main in by_group else [g for g in ("worker",) if g in by_group]
    deciding = deciding or list(by_group)
    if deciding and all(s == "succeeded" for g in deciding for s in by_group[g]):
        return RunState("succeeded", f"{' and '.join(deciding)} completed")
    return RunState("running")


def replica_name(pod: Mapping[str, Any]) -> str:
    """``worker-1``: the pod's replica group and index, as the local backend names replicas."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    group = labels.get(LABEL_REPLICA) or labels.get("training.kubeflow.org/replica-type")
    index = labels.get(_KUBEFLOW_INDEX) or labels.get(_JOB_INDEX) or annotations.get(_JOB_INDEX)
    if not group:
        return str(metadata.get("name", "pod"))
    if index is None:
        return str(group)
    offset = annotations.get(ANNOTATION_OFFSET)
    if offset is not None and str(offset).isdigit() and str(index).isdigit():
        index = int(offset) + int(index)
    return f"{group}-{index}"


_CRD_HINT = "install the Kubeflow Training Operator or use backend: native"
_RBAC_HINT = (
    "grant the flow run's service account the rights in deployments/kubernetes/rbac.yaml "
    "(create, watch and delete the training resources, Jobs and Services; read pod logs)"
)


def api_error_message(
    status: int | None,
    message: str,
    target: ApiTarget,
    *,
    verb: str,
    namespace: str,
) -> str:
    """What an API error while ``verb``-ing ``target`` means, with what to do about it."""
    where = f"in namespace `{namespace}`"
    text = f": {message}" if message else ""
    if status == 404 and target.custom and verb == "create":
        return (
            f"the cluster has no {target.kind} resource ({target.group}/{target.version} "
            f"{target.plural}): the Kubeflow Training Operator is not installed; {_CRD_HINT}"
        )
    if status == 403:
        return f"forbidden to {verb} {target.plural or target.kind} {where}{text}; {_RBAC_HINT}"
    if status == 401:
        return (
            f"the Kubernetes API refused the credentials{text}; check the kubeconfig "
            "(KUBECONFIG) or the flow run pod's service account token"
        )
    if status == 409:
        return f"{target.describe()} already exists {where}{text}; delete it or rerun"
    if status == 422:
        return f"the API server rejected {target.describe()}{text}"
    if status is None:
        return (
            f"cannot reach the Kubernetes API to {verb} {target.describe()}{text}; check "
            "KUBECONFIG (outside a cluster) or that the flow run runs in a pod"
        )
    return f"could not {verb} {target.describe()} {where} (HTTP {status}){text}"


def pod_diagnosis_message(
    pod: str, category: str, summary: str, detail: str, resolution: str
) -> str:
    """One line for a pod's diagnosis (prefect-kubernetes' categories), with a hint for the
    cases a training run meets most: GPUs nobody has, an image that cannot be pulled, OOM."""
    hint = resolution
    if category.startswith("Unschedulable") and "nvidia.com/gpu" in detail:
        hint = (
            "no node has that many free nvidia.com/gpu: lower the replica's GPU request, add "
            "GPU nodes, or add the GPU nodes' toleration (work pool `tolerations`)"
        )
    elif category == "OOMKilled":
        hint = "raise the replica's memory limit (`resources.limits.memory`) or use less memory"
    elif category == "ImagePullError":
        hint = (
            "check the image name and tag, and give the pods an image pull secret "
            "(`imagePullSecrets`, or the work pool's `image_pull_secrets`)"
        )
    text = f"[{pod}] {category}: {summary}"
    if detail and detail not in summary:
        text += f" ({detail})"
    return f"{text}; hint: {hint}" if hint else text


def exit_diagnosis(pod: str, status: Mapping[str, Any]) -> str | None:
    """One line for a container that ended with a non-zero exit code (prefect-kubernetes
    diagnoses a pod that cannot start or is killed, not a command that fails), else None."""
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        code = terminated.get("exitCode")
        if isinstance(code, int) and code != 0:
            reason = terminated.get("reason") or "Error"
            if reason == "OOMKilled":
                continue  # diagnosed with its hint by prefect-kubernetes' rules
            return (
                f"[{pod}] {reason}: container `{container.get('name')}` exited with code "
                f"{code}; hint: its log above says why (run it locally without `--backend` to "
                "debug)"
            )
    return None
