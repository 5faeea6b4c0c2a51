"""This machine's GPUs as one pool that every op of the local backend draws from: pure decisions.

A job, a DAG op, a sweep trial and each replica of a distributed op are each shown exactly the
GPUs they ask for (``CUDA_VISIBLE_DEVICES``), and no two ops hold the same GPU at once, whether
they run in one CLI or in several (the holding itself is file locks: ``runtime/gpu/_gpu_locks.py``).
This module decides, without any I/O:

* which GPUs the machine has (`machine_gpus`: ``CUDA_VISIBLE_DEVICES`` when set, else the
  ``nvidia-smi -L`` listing, MIG instances as devices),
* how many ops may share one GPU (`sharing`: 1 unless ``POLYAXON_PREFECT_GPU_SHARING=k``),
* whether a request can ever be met (`capacity_problem`: refused before anything starts),
* which free slots an op takes (`choose`: all of them at once or none, so a gang never
  half-starts and two waiting gangs never deadlock on each other's halves),
* what a waiting op says (`wait_reason`) and the hint for a process that asked for no GPU but
  looked for CUDA (`looks_for_cuda`).

A slot is one GPU's share: with sharing ``k`` every GPU has ``k`` slots. An op's request is one
count per process (a job: one; a distributed op: one per replica); a process's GPUs are
distinct, replicas may share a GPU only when sharing is on (gloo runs so; NCCL refuses two
ranks on one GPU: "Duplicate GPU detected").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from polyaxon_prefect.exceptions import Problem

__all__ = [
    "MAX_SHARING",
    "NO_GPU_HINT",
    "SHARING_ENV",
    "Slot",
    "capacity_problem",
    "choose",
    "container_gpus",
    "looks_for_cuda",
    "machine_gpus",
    "parse_nvidia_smi",
    "sharing",
    "slots",
    "visible_env",
    "wait_reason",
]

SHARING_ENV = "POLYAXON_PREFECT_GPU_SHARING"
"""How many ops may hold one GPU at once (a whole number >= 1; default 1: none share)."""

MAX_SHARING = 16
"""The most ops one GPU may hold at once: each share is a lock file every op taking GPUs opens,
so 100000 ran out of file descriptors (and 10**20 never finished listing the shares)."""

NO_GPU_HINT = (
    "this op asked for no GPUs and ran with CUDA_VISIBLE_DEVICES=''; "
    "add resources.limits nvidia.com/gpu to its container to use one"
)
"""Appended to the failure of a process that asked for no GPU and then looked for CUDA."""

_GPU_KEYS = ("nvidia.com/gpu", "gpu")
_NEGATIVE = re.compile(r"-\d+")

_CUDA_SIGNS = re.compile(
    r"no CUDA GPUs are available|no GPUs found|CUDA_VISIBLE_DEVICES|NCCL|"
    r"CUDA driver initialization failed|cuda runtime error|Found no NVIDIA driver|"
    r"torch\.cuda\.|CUDA error|cudaGetDeviceCount",
    re.IGNORECASE,
)


def container_gpus(container: object) -> int | str:
    """The GPU count a container asks for: its limit, else its request, else 0; the raw text
    when it is not a whole number (the caller reports it where it is)."""
    resources = getattr(container, "resources", None)
    for section in (getattr(resources, "limits", None), getattr(resources, "requests", None)):
        for key in _GPU_KEYS:
            if section and key in section:
                text = str(section[key]).strip()
                return int(text) if text.isdigit() else text
    return 0


def parse_nvidia_smi(listing: str) -> list[str]:
    """Device ids from ``nvidia-smi -L``: a GPU's index, or the UUIDs of its MIG instances
    (``MIG-...``, what ``CUDA_VISIBLE_DEVICES`` accepts) when it is partitioned."""
    devices: list[str] = []
    gpu: str | None = None
    migs: list[str] = []
    for line in listing.splitlines():
        text = line.strip()
        if text.startswith("GPU "):
            if gpu is not None:
                devices.extend(migs or [gpu])
            gpu, migs = text[4:].split(":", 1)[0].strip(), []
        elif text.startswith("MIG ") and gpu is not None:
            found = re.search(r"UUID:\s*(MIG-[^\s)]+)", text)
            if found:
                migs.append(found.group(1))
    if gpu is not None:
        devices.extend(migs or [gpu])
    return devices


def machine_gpus(visible: str | None, listing: str | None) -> list[str]:
    """This machine's device ids: ``CUDA_VISIBLE_DEVICES`` (``visible``) when set (so a user
    or a scheduler above can hand the product a subset), else the ``nvidia-smi -L`` listing,
    else none. Repeated ids count once: sharing is `sharing`'s, not a trick of the list."""
    if visible is not None:
        devices: list[str] = []
        for part in (part.strip() for part in visible.split(",")):
            if part == "NoDevFiles" or _NEGATIVE.fullmatch(part):
                break  # CUDA stops at the first invalid id: `-1` (and a scheduler's
                # `NoDevFiles`) is how a machine says "no GPU here"
            if part:
                devices.append(part)
        return list(dict.fromkeys(devices))
    return parse_nvidia_smi(listing or "")


def sharing(value: str | None) -> int:
    """Ops per GPU from ``POLYAXON_PREFECT_GPU_SHARING``; 1 when unset.

    Raises:
        ValueError: not a whole number >= 1 (the message names the variable and the value).
    """
    if value is None or not value.strip():
        return 1
    text = value.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_SHARING:
        raise ValueError(
            f"{SHARING_ENV}={value!r}: expected a whole number of ops per GPU, "
            f"from 1 to {MAX_SHARING}"
        )
    return int(text)


@dataclass(frozen=True, order=True)
class Slot:
    """One share of a GPU (``index`` < sharing); ``gpu`` is the device id."""

    index: int
    gpu: str

    @property
    def key(self) -> str:
        """A file-name-safe name of the slot (MIG UUIDs contain ``/``-free characters only,
        but keep it safe anyway)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.gpu)
        return f"gpu-{safe}.{self.index}"


def slots(gpus: Sequence[str], per_gpu: int) -> list[Slot]:
    """Every slot of the pool, in the one global order every acquirer uses: first share of
    every GPU, then the second... (so ops spread over GPUs before they share one)."""
    return [Slot(index, gpu) for index in range(per_gpu) for gpu in gpus]


def capacity_problem(
    requests: Sequence[int],
    gpus: Sequence[str],
    per_gpu: int,
    path: tuple[str | int, ...],
    names: Sequence[str] = (),
) -> Problem | None:
    """Why ``requests`` (one GPU count per process, of the processes ``names`` when it is a
    distributed op's replicas) can never run on this machine, or None.

    A process needs distinct GPUs; the processes of one op share GPUs only under sharing."""
    total = sum(requests)
    if total == 0:
        return None
    have = len(gpus)
    biggest = max(requests)
    if biggest <= have and total <= have * per_gpu:
        return None
    if names:
        each = ", ".join(f"{name}: {n}" for name, n in zip(names, requests, strict=True) if n)
        asks = f"the replicas ask for {total} GPU(s) ({each})"
    else:
        asks = f"this op asks for {total} GPU(s)"
    share = (
        f"or share GPUs between ops with {SHARING_ENV}=k (k ops per GPU: gloo runs so, NCCL "
        "refuses two ranks on one GPU)"
        if biggest <= have
        else "or run on a cluster"
    )
    return Problem(
        f"{asks} but this machine has {have}" + (f" (shared by {per_gpu})" if per_gpu > 1 else ""),
        rule="not_enough_gpus",
        path=path,
        hint=f"lower `nvidia.com/gpu` (or the replica counts), {share}",
    )


def choose(free: Sequence[Slot], requests: Sequence[int]) -> list[list[Slot]] | None:
    """The slots each process of an op takes, all at once, or None when the free ones cannot
    meet every request (then the op takes nothing and waits: no partial gang).

    Each process gets distinct GPUs; among the free slots it prefers GPUs this op uses least,
    then lower shares, in the pool's order, so an op spreads before it doubles up."""
    left = sorted(free)
    order = {slot: n for n, slot in enumerate(left)}
    used: dict[str, int] = {}
    taken: list[list[Slot]] = []
    for count in requests:
        mine: list[Slot] = []
        for slot in sorted(left, key=lambda s: (used.get(s.gpu, 0), order[s])):
            if len(mine) == count:
                break
            if all(slot.gpu != other.gpu for other in mine):
                mine.append(slot)
        if len(mine) < count:
            return None
        for slot in mine:
            left.remove(slot)
            used[slot.gpu] = used.get(slot.gpu, 0) + 1
        taken.append(mine)
    return taken


def wait_reason(requests: Sequence[int], held: Mapping[Slot, str]) -> str:
    """``waiting for 1 GPU: 2 held by run a, run b``: what an op that cannot start yet is
    waiting for, and who holds the GPUs (``held``: each busy slot's holder, as it wrote it)."""
    want = sum(requests)
    gpus = {slot.gpu for slot in held}
    holders = list(dict.fromkeys(held.values()))
    who = ", ".join(f"run {holder}" for holder in holders) or "another process"
    return f"waiting for {want} GPU{'s' if want != 1 else ''}: {len(gpus)} held by {who}"


def visible_env(devices: Sequence[str]) -> dict[str, str]:
    """The variables that show a process exactly ``devices`` (``""``: none), for CUDA and for
    the NVIDIA container runtime (``void``: no GPU)."""
    ids = ",".join(devices)
    return {"CUDA_VISIBLE_DEVICES": ids, "NVIDIA_VISIBLE_DEVICES": ids or "void"}


def looks_for_cuda(lines: Sequence[str]) -> bool:
    """Whether a process's last lines show it looked for CUDA (``No CUDA GPUs are available``,
    ``no GPUs found``, an NCCL error...): the sign that it needed a GPU it did not ask for."""
    return any(_CUDA_SIGNS.search(line) for line in lines)
