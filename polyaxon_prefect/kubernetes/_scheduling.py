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

Not wired into the cluster executor yet: that executor is being reworked separately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DISRUPTION_RETRIES",
    "KUEUE_QUEUE_LABEL",
    "PREVIOUS_OUTPUTS_ENV",
    "Disruption",
    "RetryDecision",
    "disruption",
    "pending_reason",
    "previous_attempt_env",
    "queue_labels",
    "retry_after_disruption",
]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label Kueue admits a workload by (its LocalQueue); every pod of a gang carries it."""

PREVIOUS_OUTPUTS_ENV = "POLYAXON_PREFECT_PREVIOUS_OUTPUTS_PATH"
"""Where the attempt before this one (taken away by the cluster) left its outputs, checkpoints
included, so a new attempt can resume from them."""

DISRUPTION_RETRIES = 3
"""How many times a run taken away by the cluster is run again by default; its own budget,
not ``termination.maxRetries`` (which counts the failures of the user's code)."""

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
    first: it is the pod's current state; else the latest event with a pending reason."""
    for container in (status or {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _WAITING_REASONS:
            text = " ".join(str(waiting.get("message") or "").split())
            name = container.get("name", "?")
            return f"pending: container `{name}` {waiting['reason']}" + (
                f": {text}" if text else ""
            )
    relevant = [e for e in events if e.get("reason") in _PENDING_REASONS]
    if not relevant:
        return None
    latest = max(relevant, key=_when)
    message = " ".join(str(latest.get("message") or "").split())
    line = f"pending: {latest['reason']}" + (f": {message}" if message else "")
    if "nvidia.com/gpu" in message and "Insufficient" in message:
        line += " (no node has the GPUs it asks for free; it waits for them)"
    return line


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
