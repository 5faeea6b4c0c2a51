"""Scheduling on a cluster, as pure decisions over what the Kubernetes API returns.

Three questions a GPU user asks of a cluster run, each answered from plain API dicts (a pod's
``status``, its events), with no client here, so the executor that watches pods can call them
and tests can feed them recorded objects:

* which Kueue queue admits the op as one gang (`queue_labels`: the ``kueue.x-k8s.io/queue-name``
  label from the Polyaxonfile's labels, else the work pool's queue; none: Kueue is not used);
* why a pod is still pending (`pending_reason`: the latest ``FailedScheduling`` such as
  ``Insufficient nvidia.com/gpu``, an image that cannot be pulled...), one line for the run's
  message in ``ls``/``get``/logs;
* whether a pod that ended was taken away rather than failed by its code (`disruption`:
  preempted, evicted, its node lost or shut down), and then whether to run it again on the
  disruption budget, apart from ``termination.maxRetries`` (`retry_after_disruption`), telling
  the new attempt where the previous one left its outputs (`previous_attempt_env`).

And what the executor applies to the manifests it submits (`schedule_manifests`: the queue
label on each workload, and on each Job a ``podFailurePolicy`` that does not count a disrupted
pod against ``backoffLimit``), and to those of a new attempt (`resubmission`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._cluster import pod_specs

__all__ = [
    "DISRUPTION_RETRIES",
    "DISRUPTION_RETRIES_ENV",
    "KUEUE_QUEUE_LABEL",
    "PREVIOUS_OUTPUTS_ENV",
    "QUEUE_VARIABLE",
    "Disruption",
    "RetryDecision",
    "disruption",
    "disruption_budget",
    "file_queue",
    "pending_reason",
    "previous_attempt_env",
    "queue_labels",
    "resubmission",
    "retry_after_disruption",
    "schedule_manifests",
]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label Kueue admits a workload by (its LocalQueue); every pod of a gang carries it."""

PREVIOUS_OUTPUTS_ENV = "POLYAXON_PREFECT_PREVIOUS_OUTPUTS_PATH"
"""Where the attempt before this one (taken away by the cluster) left its outputs, checkpoints
included, so a new attempt can resume from them."""

DISRUPTION_RETRIES = 3
"""How many times a run taken away by the cluster is run again by default; its own budget,
not ``termination.maxRetries`` (which counts the failures of the user's code)."""

DISRUPTION_RETRIES_ENV = "POLYAXON_PREFECT_PREEMPTION_RETRIES"
"""Overrides `DISRUPTION_RETRIES` (``0``: a run taken away fails)."""

QUEUE_VARIABLE = "kueue_queue_name"
"""The work pool (or deployment) job variable that names the Kueue LocalQueue of its runs."""

_DISRUPTION_RULE = {
    "action": "Ignore",
    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
}

_PENDING_REASONS = (
    "FailedScheduling",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "FailedMount",
    "FailedAttachVolume",
    "FailedCreatePodSandBox",
)
_WAITING_REASONS = (
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
)
_DISRUPTION_CONDITIONS = {
    "PreemptionByScheduler": "preempted",
    "PreemptionByKubeScheduler": "preempted",
    "EvictionByEvictionAPI": "evicted",
    "DeletionByTaintManager": "node lost",
    "DeletionByPodGC": "node lost",
    "TerminationByKubelet": "node shut down",
}
_DISRUPTION_REASONS = {
    "Preempting": "preempted",
    "Evicted": "evicted",
    "NodeLost": "node lost",
    "NodeShutdown": "node shut down",
    "Shutdown": "node shut down",
    "Terminated": "node shut down",
}


def queue_labels(labels: Mapping[str, str] | None, pool_queue: str | None) -> dict[str, str]:
    """The Kueue label of every pod of the op: the file's own (``environment.labels``), else
    the work pool's queue (where the cluster runs Kueue), else none."""
    own = (labels or {}).get(KUEUE_QUEUE_LABEL)
    queue = own or pool_queue
    return {KUEUE_QUEUE_LABEL: queue} if queue else {}


def _when(event: Mapping[str, Any]) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if value:
            return str(value)
    metadata = event.get("metadata") or {}
    return str(metadata.get("creationTimestamp") or "")


def pending_reason(
    events: Sequence[Mapping[str, Any]], status: Mapping[str, Any] | None = None
) -> str | None:
    """Why the pod is still pending, one line (``pending: FailedScheduling: 0/3 nodes are
    available: 3 Insufficient nvidia.com/gpu.``), or None when nothing says.

    A container waiting on its image (``status.containerStatuses[].state.waiting``) comes
    first: it is the pod's current state; else the latest event with a pending reason; else
    the pod's ``PodScheduled`` condition when it is ``False`` (``Unschedulable``)."""
    for container in (status or {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _WAITING_REASONS:
            text = " ".join(str(waiting.get("message") or "").split())
            name = container.get("name", "?")
            return f"pending: container `{name}` {waiting['reason']}" + (
                f": {text}" if text else ""
            )
    relevant = [e for e in events if e.get("reason") in _PENDING_REASONS]
    if relevant:
        latest = max(relevant, key=_when)
        reason, message = str(latest["reason"]), str(latest.get("message") or "")
    else:  # the scheduler's own word on the pod (what ``kubectl describe`` shows)
        scheduled = _condition(status or {}, "PodScheduled")
        if scheduled is None or scheduled.get("status") != "False":
            return None
        reason = str(scheduled.get("reason") or "Unschedulable")
        message = str(scheduled.get("message") or "")
    message = " ".join(message.split())
    line = f"pending: {reason}" + (f": {message}" if message else "")
    if "nvidia.com/gpu" in message and "Insufficient" in message:
        line += " (no node has the GPUs it asks for free; it waits for them)"
    return line


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


@dataclass(frozen=True)
class Disruption:
    """The cluster took the pod away (``what``: preempted, evicted, node lost, node shut
    down), with the cluster's own words."""

    what: str
    message: str


def disruption(status: Mapping[str, Any]) -> Disruption | None:
    """Whether a pod's ``status`` says the cluster, not the code, ended it.

    Read from the ``DisruptionTarget`` condition Kubernetes sets (1.26+), else from the pod's
    ``reason``. A container killed for its memory (``OOMKilled``) or a non-zero exit is the
    code's failure: None."""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            what = _DISRUPTION_CONDITIONS.get(str(condition.get("reason")), "disrupted")
            return Disruption(what, str(condition.get("message") or condition.get("reason")))
    reason = str(status.get("reason") or "")
    if reason in _DISRUPTION_REASONS:
        return Disruption(_DISRUPTION_REASONS[reason], str(status.get("message") or reason))
    return None


@dataclass(frozen=True)
class RetryDecision:
    """Run the op again (``retry``) or let it fail, and the line that says why."""

    retry: bool
    message: str


def retry_after_disruption(
    taken: Disruption, attempts: int, budget: int = DISRUPTION_RETRIES
) -> RetryDecision:
    """After the ``attempts``-th attempt was taken away: run it again while the disruption
    budget lasts (``termination.maxRetries`` is not spent: the code did not fail)."""
    if attempts <= budget:
        return RetryDecision(
            True,
            f"attempt {attempts} was {taken.what} ({taken.message}); running it again "
            f"({attempts} of {budget} disruption retries, maxRetries not spent)",
        )
    return RetryDecision(
        False,
        f"attempt {attempts} was {taken.what} ({taken.message}); {budget} disruption retries spent",
    )


def previous_attempt_env(outputs_path: str | None) -> dict[str, str]:
    """The new attempt's pointer to the outputs (checkpoints) its previous attempt left."""
    return {PREVIOUS_OUTPUTS_ENV: outputs_path} if outputs_path else {}


def disruption_budget(environ: Mapping[str, str]) -> int:
    """How many times a run taken away is run again: ``POLYAXON_PREFECT_PREEMPTION_RETRIES``
    (a whole number, at least 0), else `DISRUPTION_RETRIES`."""
    text = (environ.get(DISRUPTION_RETRIES_ENV) or "").strip()
    if text.isdigit():
        return int(text)
    return DISRUPTION_RETRIES


def file_queue(manifests: Sequence[Mapping[str, Any]]) -> str | None:
    """The Kueue queue the Polyaxonfile names: the ``kueue.x-k8s.io/queue-name`` label of a
    workload or of one of its pods (``environment.labels`` end on the pods)."""
    for manifest in manifests:
        found = ((manifest.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE_LABEL)
        if found:
            return str(found)
        spec = manifest.get("spec") or {}
        templates = [spec.get("template")] + [
            group.get("template")
            for key, groups in spec.items()
            if key.endswith("ReplicaSpecs") and isinstance(groups, Mapping)
            for group in groups.values()
            if isinstance(group, Mapping)
        ]
        for template in templates:
            if isinstance(template, Mapping):
                labels = (template.get("metadata") or {}).get("labels") or {}
                if labels.get(KUEUE_QUEUE_LABEL):
                    return str(labels[KUEUE_QUEUE_LABEL])
    return None


def _ignore_disruptions(spec: dict[str, Any]) -> None:
    """A Job's pods taken away by the cluster are not counted against its ``backoffLimit``
    (``podFailurePolicy`` rule ``Ignore`` on ``DisruptionTarget``; the Job starts the pod
    again). Kubernetes allows the policy only with ``restartPolicy: Never``; a file's own
    policy keeps its rules, this one is added after them unless one names the condition."""
    template = spec.get("template") or {}
    if (template.get("spec") or {}).get("restartPolicy") != "Never":
        return
    policy = spec.setdefault("podFailurePolicy", {})
    rules = policy.setdefault("rules", [])
    named = any(
        c.get("type") == "DisruptionTarget"
        for rule in rules
        if isinstance(rule, Mapping)
        for c in rule.get("onPodConditions") or []
        if isinstance(c, Mapping)
    )
    if not named:
        rules.append(copy.deepcopy(_DISRUPTION_RULE))


def schedule_manifests(
    manifests: Sequence[Mapping[str, Any]], pool_queue: str | None
) -> list[dict[str, Any]]:
    """Copies of ``manifests`` as they are submitted: the Kueue queue label (the file's, else
    the pool's) on every workload (each Job, the Kubeflow resource: what Kueue admits, the
    whole gang at once for a Kubeflow resource), and disruptions not counted by any Job."""
    queue = queue_labels({KUEUE_QUEUE_LABEL: file_queue(manifests) or ""}, pool_queue)
    result = []
    for manifest in manifests:
        item = copy.deepcopy(dict(manifest))
        workload = item.get("kind") != "Service"
        if queue and workload:
            item.setdefault("metadata", {}).setdefault("labels", {}).update(queue)
        if item.get("kind") == "Job":
            _ignore_disruptions(item.setdefault("spec", {}))
        result.append(item)
    return result


def resubmission(
    manifests: Sequence[Mapping[str, Any]], previous_outputs: str | None
) -> list[dict[str, Any]]:
    """Copies of ``manifests`` for a new attempt: every container told where the previous
    attempt left its outputs (`PREVIOUS_OUTPUTS_ENV`), what the server added removed."""
    env = previous_attempt_env(previous_outputs)
    result = []
    for manifest in manifests:
        item = copy.deepcopy(dict(manifest))
        item.pop("status", None)
        metadata = item.setdefault("metadata", {})
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            metadata.pop(key, None)
        for pod in pod_specs(item):
            for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                values = [e for e in container.get("env") or [] if e.get("name") not in env]
                container["env"] = [*values, *({"name": k, "value": v} for k, v in env.items())]
        result.append(item)
    return result
