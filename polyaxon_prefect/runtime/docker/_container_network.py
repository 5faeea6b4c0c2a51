"""The network of one distributed run in containers: created at its start, gone at its end.

`open_network` creates a network of the run's own, labelled as its containers are (so the
session's reaper and the next CLI remove it with them: `reap_containers`), and says how its
replicas find each other (`polyaxon_prefect.containers._network`): by DNS where the network
answers (Docker; Podman with netavark and aardvark-dns), else by a static address each and
``/etc/hosts`` entries for all of them (Podman's CNI backend without the ``dnsname`` plugin,
as Debian's podman 4 installs). Where no network can be created at all (rootless without a
network helper), the caller falls back to the host's network on loopback ports.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from polyaxon_prefect.containers import (
    network_create_argv,
    network_name,
    replica_hostname,
    static_addresses,
)
from polyaxon_prefect.runtime.docker._container_cli import ContainerCli

__all__ = ["NetworkError", "RunNetwork", "open_network", "remove_network"]

_PODMAN_INSPECT = "{{.DNSEnabled}} {{range .Subnets}}{{.Subnet}} {{end}}"


@dataclass(frozen=True)
class RunNetwork:
    """A run's network: its name, each replica's hostname, and the static addresses given
    where the network has no DNS (hostname: address; empty where DNS answers)."""

    name: str
    hostnames: Mapping[str, str]
    """By replica name (``worker-1``)."""
    addresses: Mapping[str, str] = field(default_factory=dict)


class NetworkError(Exception):
    """The network could not be created or inspected: the one line saying why."""


def open_network(
    cli: ContainerCli,
    run_uuid: str,
    suffix: str,
    replicas: Sequence[str],
    labels: Mapping[str, str],
) -> RunNetwork:
    """Create the run's network and decide how its replicas resolve each other.

    Raises:
        NetworkError: the CLI could not create it (or created one without a usable subnet,
            then removed it).
    """
    name = network_name(run_uuid, suffix)
    hostnames = {replica: replica_hostname(run_uuid, replica) for replica in replicas}
    try:
        created = cli.run(*network_create_argv(cli.kind, name, labels)[1:])
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetworkError(str(exc)) from None
    if created.returncode != 0:
        raise NetworkError((created.stderr.strip().splitlines() or ["no reason given"])[-1])
    if cli.kind == "docker":  # user-defined networks always answer for their aliases
        return RunNetwork(name, hostnames)
    try:
        inspected = cli.run("network", "inspect", "--format", _PODMAN_INSPECT, name)
        words = inspected.stdout.split()
        if inspected.returncode == 0 and words and words[0] == "true":
            return RunNetwork(name, hostnames)
        subnets = [w for w in words[1:] if "." in w]  # IPv4 first: what replicas dial
        if not subnets:
            raise NetworkError(f"network {name} has no IPv4 subnet: {inspected.stderr.strip()}")
        addresses = static_addresses(subnets[0], list(hostnames.values()))
    except (OSError, subprocess.TimeoutExpired, ValueError, NetworkError) as exc:
        remove_network(cli, name)
        raise NetworkError(str(exc)) from None
    return RunNetwork(name, hostnames, addresses)


def remove_network(cli: ContainerCli, name: str) -> None:
    """Remove ``name`` (its containers already gone); nothing if it is not there."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        cli.run("network", "rm", name)
