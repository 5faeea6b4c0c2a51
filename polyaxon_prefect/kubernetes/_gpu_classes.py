"""GPU classes of a cluster op: which Prefect global concurrency limit gates it, for how many slots.

Where Kueue does not admit an op as one gang, the cluster executor takes all the op's GPUs at
once as slots of Prefect global concurrency limits, one limit per GPU class, before it creates
any Job or replica (`polyaxon_prefect.prefect.kubernetes._gpu_slots`). Here is what is decided from
the
manifests alone, with no client:

* a GPU class is the extended resource a container limits (``nvidia.com/gpu``,
  ``amd.com/gpu``...) plus, when the pod pins one in its ``nodeSelector``, the accelerator
  (``nvidia.com/gpu.product``, ``cloud.google.com/gke-accelerator``...): two ops asking for
  A100s contend for the A100 limit, not for the T4 one;
* its limit's name (`gpu_class_name`): ``gpu-`` then the resource with its ``/`` as ``-``, then
  ``-`` and the accelerator lower-cased, every character but letters, digits, ``.``, ``_`` and
  ``-`` made ``-``: ``gpu-nvidia.com-gpu``, ``gpu-nvidia.com-gpu-a100``. Prefect refuses ``/``
  (and ``%&<>``) in a limit's name, and the name is typed by hand in
  ``prefect gcl create gpu-nvidia.com-gpu --limit 8``;
* how many slots the op takes of each (`gpu_slots`): every pod of every Job or replica group,
  replicas x the GPUs of each pod (a container's limit, else its request), all at once;
* the lines the user reads: why the op waits (`slots_wait_reason`), why it can never run
  (`slots_refusal`), and that no limit gates it (`no_limit_note`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ACCELERATOR_LABELS",
    "GPU_LIMIT_PREFIX",
    "gpu_class_name",
    "gpu_slots",
    "no_limit_note",
    "slots_refusal",
    "slots_wait_reason",
]

GPU_LIMIT_PREFIX = "gpu-"
"""Every GPU-class limit's name starts so (``prefect gcl ls`` shows them together)."""

ACCELERATOR_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "amd.com/gpu.product-name",
    "karpenter.k8s.aws/instance-gpu-name",
    "accelerator",
)
"""Node labels that name a GPU model, in the order they are looked for in a pod's
``nodeSelector`` (NVIDIA's GPU feature discovery, GKE, AMD's node labeller, Karpenter on AWS,
the generic ``accelerator`` label many clusters use)."""

_OTHER_GPU_RESOURCES = frozenset({"gpu.intel.com/i915", "gpu.intel.com/xe"})
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def _is_gpu_resource(key: str) -> bool:
    return key.endswith("/gpu") or key in _OTHER_GPU_RESOURCES


def gpu_class_name(resource: str, accelerator: str | None = None) -> str:
    """The limit gating ``resource`` GPUs (of model ``accelerator``, when the pod pins one)."""
    name = GPU_LIMIT_PREFIX + _UNSAFE.sub("-", resource.lower().replace("/", "-")).strip("-")
    if accelerator:
        model = _UNSAFE.sub("-", accelerator.lower()).strip("-")
        if model:
            name += f"-{model}"
    return name


def _count(value: object) -> int:
    text = str(value).strip()
    return int(text) if text.isdigit() else 0


def _pod_gpus(pod: Mapping[str, Any]) -> dict[str, int]:
    """GPUs one pod holds, by resource: its containers' limits (else requests) added, or its
    largest init container's when that is more (init containers run one at a time, first)."""

    def of(containers: Any) -> list[dict[str, int]]:
        found = []
        for container in containers or []:
            resources = container.get("resources") or {}
            asks: dict[str, int] = {}
            for section in (resources.get("requests") or {}, resources.get("limits") or {}):
                for key, value in section.items():
                    if _is_gpu_resource(str(key)):
                        asks[str(key)] = _count(value)  # the limit wins (read last)
            found.append(asks)
        return found

    total: dict[str, int] = {}
    for asks in of(pod.get("containers")):
        for key, n in asks.items():
            total[key] = total.get(key, 0) + n
    for asks in of(pod.get("initContainers")):
        for key, n in asks.items():
            total[key] = max(total.get(key, 0), n)
    return {k: n for k, n in total.items() if n > 0}


def _accelerator(pod: Mapping[str, Any]) -> str | None:
    selector = pod.get("nodeSelector") or {}
    for label in ACCELERATOR_LABELS:
        if selector.get(label):
            return str(selector[label])
    return None


def _templates(manifest: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], int]]:
    """Each pod template of ``manifest`` and how many pods of it run at once: a Job's
    ``parallelism`` (1 by default), a replica group's ``replicas`` (1 by default)."""
    spec = manifest.get("spec") or {}
    found: list[tuple[Mapping[str, Any], int]] = []
    template = spec.get("template")
    if isinstance(template, Mapping):
        parallelism = spec.get("parallelism")
        pods = 1 if parallelism is None else _count(parallelism)
        found.append((template.get("spec") or {}, pods))
    for key, groups in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(groups, Mapping):
            for group in groups.values():
                if isinstance(group, Mapping):
                    replicas = group.get("replicas")
                    pods = 1 if replicas is None else _count(replicas)
                    found.append(((group.get("template") or {}).get("spec") or {}, pods))
    return found


def gpu_slots(manifests: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """``{limit name: slots}``: every GPU the op's pods hold at once, by GPU class (empty: the
    op asks for none). A sum over Jobs and replica groups of pods x GPUs per pod."""
    slots: dict[str, int] = {}
    for manifest in manifests:
        for pod, count in _templates(manifest):
            accelerator = _accelerator(pod)
            for resource, gpus in _pod_gpus(pod).items():
                name = gpu_class_name(resource, accelerator)
                slots[name] = slots.get(name, 0) + gpus * count
    return {name: n for name, n in sorted(slots.items()) if n > 0}


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def slots_wait_reason(name: str, wanted: int, taken: int | None, limit: int) -> str:
    """``waiting for 2 GPUs of class gpu-nvidia.com-gpu: 7 of 8 slots taken``."""
    held = f"{taken} of {limit} slots taken" if taken is not None else f"limit {limit}"
    return f"waiting for {_gpus(wanted)} of class {name}: {held}"


def slots_refusal(name: str, wanted: int, limit: int) -> str:
    """Why an op that asks for more GPUs of a class than its limit holds never runs."""
    return (
        f"the op asks for {_gpus(wanted)} of class {name} at once, but the Prefect global "
        f"concurrency limit `{name}` has {limit} slot{'' if limit == 1 else 's'}, so it could "
        f"never start; hint: lower `nvidia.com/gpu` or the replica counts, or raise the limit: "
        f"`prefect gcl update {name} --limit {wanted}`"
    )


def no_limit_note(name: str, wanted: int) -> str:
    """The one line of an op whose GPU class no limit gates (it is submitted at once)."""
    return (
        f"no Prefect global concurrency limit `{name}`: the op's {_gpus(wanted)} are not "
        f"queued here (the cluster's scheduler decides); to queue ops for them, create it "
        f"with `prefect gcl create {name} --limit N` (N: the cluster's GPUs of that class)"
    )
