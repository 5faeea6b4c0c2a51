"""The ``run`` command line of one container, from an op's rendered fields."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

__all__ = [
    "CLIS",
    "CLI_ENV",
    "LABEL_PID",
    "LABEL_RUN",
    "LABEL_SESSION",
    "ContainerRun",
    "Mount",
    "container_name",
    "env_names",
    "gpu_count",
    "gpu_flags",
    "parse_cpus",
    "parse_memory",
    "pull_flag",
    "remove_argv",
    "run_argv",
]

CLI_ENV = "POLYAXON_PREFECT_CONTAINER_CLI"
"""``podman`` or ``docker`` (or a path to either): which CLI runs containers; unset: docker
when its daemon answers, else podman."""

CLIS = ("podman", "docker")

LABEL_SESSION = "polyaxon-prefect.session"
"""The run session that started the container: the reaper removes them by this label."""
LABEL_PID = "polyaxon-prefect.pid"
"""The process that started it: a later CLI removes those whose process is gone."""
LABEL_RUN = "polyaxon-prefect.run"
"""The Polyaxon run uuid of the op."""

_PULL = {"Always": "always", "IfNotPresent": "missing", "Never": "never"}
_NAME = re.compile(r"[^a-zA-Z0-9_.-]+")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")


@dataclass(frozen=True)
class Mount:
    """A host path bound into the container (at ``target``, the same path by default)."""

    source: str
    target: str = ""
    read_only: bool = False

    def flag(self) -> str:
        suffix = ":ro" if self.read_only else ""
        return f"{self.source}:{self.target or self.source}{suffix}"


@dataclass(frozen=True)
class ContainerRun:
    """What one ``run`` command says: every field is one flag (or none when unset)."""

    name: str
    image: str
    argv: Sequence[str]
    env: Sequence[str] = ()
    """Names only: the value of each is the CLI's own environment variable of that name."""
    workdir: str | None = None
    mounts: Sequence[Mount] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    pull: str = "missing"
    cpus: str | None = None
    memory: int | None = None
    gpus: int = 0
    gpu_devices: Sequence[str] = ()
    """The machine's GPU indexes this container gets (the ones the GPU pool gave the op),
    else the first ``gpus``."""
    network: str | None = None
    hostname: str | None = None
    aliases: Sequence[str] = ()
    """Names the network's DNS answers with this container's address (Docker, netavark)."""
    ip: str | None = None
    """A static address on ``network`` (where it has no DNS: `static_addresses`)."""
    hosts: Mapping[str, str] = field(default_factory=dict)
    """``/etc/hosts`` entries (name: address): the other replicas, where no DNS answers."""
    publish: Sequence[tuple[int, int]] = ()
    """(this machine's port, the container's): a service's ports, on loopback only."""


def container_name(run_uuid: str, suffix: str) -> str:
    """A container name unique to one attempt of one run (a retry gets a new suffix)."""
    return _NAME.sub("-", f"plx-{run_uuid[:12]}-{suffix}")


def pull_flag(policy: str | None) -> str:
    """The ``--pull`` value of a Kubernetes ``imagePullPolicy`` (default ``IfNotPresent``:
    an image that is here is never pulled again, as locally built images are not in any
    registry)."""
    return _PULL.get(policy or "IfNotPresent", "missing")


def parse_cpus(quantity: object) -> str | None:
    """``--cpus`` of a Kubernetes CPU quantity (``2``, ``0.5``, ``500m``); None if unset or
    not a quantity."""
    if quantity is None or quantity == "":
        return None
    text = str(quantity).strip()
    try:
        value = Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text)
    except InvalidOperation:
        return None
    return format(value.normalize(), "f") if value > 0 else None


def parse_memory(quantity: object) -> int | None:
    """``--memory`` bytes of a Kubernetes memory quantity (``512Mi``, ``1G``, ``1e9``)."""
    if quantity is None or quantity == "":
        return None
    text = str(quantity).strip()
    factor = 1
    for suffixes in (_BINARY, _DECIMAL):
        for suffix, size in suffixes.items():
            if text.endswith(suffix):
                text, factor = text[: -len(suffix)], size
                break
        if factor != 1:
            break
    try:
        value = int(Decimal(text) * factor)
    except InvalidOperation:
        return None
    return value if value > 0 else None


def gpu_count(resources: Mapping[str, object]) -> int:
    """The GPUs a container asks for: its ``nvidia.com/gpu`` (or ``amd.com/gpu``) limit."""
    for key in _GPU_KEYS:
        value = resources.get(key)
        if value not in (None, ""):
            try:
                return max(0, int(str(value)))
            except ValueError:
                return 0
    return 0


def gpu_flags(cli: str, count: int, devices: Sequence[str] = ()) -> list[str]:
    """The flags giving ``count`` GPUs: Docker's ``--gpus``; Podman's CDI devices
    (``nvidia.com/gpu=INDEX``, one per GPU). ``devices``: the indexes this container may use
    (a slice of the machine's, as replicas get locally), else the first ``count``."""
    if count <= 0:
        return []
    chosen = list(devices)[:count] or [str(i) for i in range(count)]
    if cli == "docker":
        return ["--gpus", f'"device={",".join(chosen)}"']
    return [flag for index in chosen for flag in ("--device", f"nvidia.com/gpu={index}")]


def env_names(env: Mapping[str, str], inherited: Mapping[str, str]) -> list[str]:
    """The variables of an op's ``env`` that the container gets: those the op sets (the
    tracking contract, its container ``env``, params' ``toEnv``, connections), not the ones
    it merely inherited from this machine's environment, which mean nothing in an image."""
    return sorted(name for name, value in env.items() if inherited.get(name) != value)


def remove_argv(cli: str, names: Sequence[str], grace: int = 2) -> list[str]:
    """``CLI rm -f NAMES...``: Podman first sends the stop signal and waits 10 s by default (a
    server as PID 1 ignores SIGTERM), so it is told ``grace`` seconds; Docker kills at once."""
    wait = ["--time", str(grace)] if cli != "docker" else []
    return [cli, "rm", "-f", *wait, *names]


def run_argv(cli: str, run: ContainerRun) -> list[str]:
    """``CLI run ... IMAGE ARGV...``: one list, never a shell line (a param stays one
    argument). The container is removed when it ends (``--rm``) and labelled, so whatever
    ends its CLI, a reaper finds it."""
    argv = [cli, "run", "--rm", "--name", run.name, f"--pull={run.pull}"]
    for key, value in sorted(run.labels.items()):
        argv += ["--label", f"{key}={value}"]
    for mount in run.mounts:
        argv += ["--volume", mount.flag()]
    for name in run.env:
        argv += ["--env", name]
    if run.workdir:
        argv += ["--workdir", run.workdir]
    if run.cpus:
        argv += ["--cpus", run.cpus]
    if run.memory:
        argv += ["--memory", str(run.memory)]
    argv += gpu_flags(cli, run.gpus, run.gpu_devices)
    if run.network:
        argv += ["--network", run.network]
    for alias in run.aliases:
        argv += ["--network-alias", alias]
    if run.ip:
        argv += ["--ip", run.ip]
    if run.hostname:
        argv += ["--hostname", run.hostname]
    for host, address in sorted(run.hosts.items()):
        argv += ["--add-host", f"{host}:{address}"]
    for local, inside in run.publish:
        argv += ["--publish", f"127.0.0.1:{local}:{inside}"]
    return [*argv, run.image, *run.argv]
