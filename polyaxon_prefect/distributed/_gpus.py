"""GPU requests of the replicas as ``CUDA_VISIBLE_DEVICES`` slices of this machine's GPUs.

On a cluster the scheduler gives each pod the GPUs it requests; on one machine the replicas
share the GPUs, so each one is shown only its own (disjoint, in rank order). Asking for more
than the machine has is an error before anything starts: a replica silently sharing a GPU (or
falling back to the CPU) would make a run that "works" ten times slower. A replica that asks
for none sees none (``CUDA_VISIBLE_DEVICES=""``), as a pod without a GPU limit would.
"""

from __future__ import annotations

from collections.abc import Sequence

from polyaxon_prefect.distributed._topology import Replica
from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError

__all__ = ["GPU_KEYS", "NotEnoughGpusError", "gpu_request", "gpu_slices"]

GPU_KEYS = ("nvidia.com/gpu", "gpu")
"""The resource names read as GPU counts (``gpu``: legacy files not converted by the schema)."""


class NotEnoughGpusError(UnsupportedFeatureError):
    """The replicas request more GPUs than this machine has (rule ``not_enough_gpus``)."""


def gpu_request(replica: Replica) -> int:
    """How many GPUs ``replica``'s container asks for: its limit, else its request, else 0.

    Raises:
        UnsupportedFeatureError: a count that is not a whole number (rule ``invalid_gpus``).
    """
    container = replica.spec.container
    resources = getattr(container, "resources", None)
    for section in (getattr(resources, "limits", None), getattr(resources, "requests", None)):
        for key in GPU_KEYS:
            if section and key in section:
                return _count(section[key], replica, key)
    return 0


def _count(value: object, replica: Replica, key: str) -> int:
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    raise UnsupportedFeatureError(
        [
            Problem(
                f"replica `{replica.name}` asks for {text!r} GPUs; a GPU count is a whole number",
                rule="invalid_gpus",
                path=("component", "run", replica.type, "container", "resources"),
                value=text,
                hint=f"set `{key}` to 0, 1, 2...",
            )
        ]
    )


def gpu_slices(replicas: Sequence[Replica], available: Sequence[str]) -> dict[str, str]:
    """``CUDA_VISIBLE_DEVICES`` of each replica (by name): consecutive GPUs of ``available``
    (the machine's device ids) in rank order, ``""`` for a replica that asks for none.

    Raises:
        NotEnoughGpusError: the replicas ask for more GPUs than ``available`` holds.
    """
    wanted = {r.name: gpu_request(r) for r in replicas}
    total = sum(wanted.values())
    if total > len(available):
        asks = ", ".join(f"{name}: {n}" for name, n in wanted.items() if n)
        raise NotEnoughGpusError(
            [
                Problem(
                    f"the replicas ask for {total} GPU(s) ({asks}) but this machine has "
                    f"{len(available)}",
                    rule="not_enough_gpus",
                    path=("component", "run"),
                    hint="lower `nvidia.com/gpu` or the replica counts, or run on a cluster",
                )
            ]
        )
    slices: dict[str, str] = {}
    start = 0
    for replica in replicas:
        count = wanted[replica.name]
        slices[replica.name] = ",".join(available[start : start + count])
        start += count
    return slices
