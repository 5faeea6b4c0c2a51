"""One network per distributed run: its name, each replica's hostname, and how names resolve.

On Kubernetes every replica is a pod reached by a stable name (``<job>-<type>-<index>``) on its
framework's usual port. In containers the same holds on a network of the run's own: each
replica's container is named and aliased by `replica_hostname`, and the env contract
(``TF_CONFIG``, ``MASTER_ADDR``, the MPI hostfile) names those hosts on `DEFAULT_PORTS`.

How a hostname resolves depends on the network. Docker's user-defined networks and Podman's
netavark networks with aardvark-dns answer DNS for their containers' aliases. Podman's CNI
backend answers only if the ``dnsname`` plugin is installed (Debian's podman 4 does not ship
it: its networks report ``dns_enabled: false``); there each container gets a static address of
the network's subnet (`static_addresses`) and every replica's name is written into every
container's ``/etc/hosts`` (``--add-host``), which resolves without any DNS server.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

__all__ = [
    "network_create_argv",
    "network_name",
    "replica_hostname",
    "static_addresses",
]

_LABEL = re.compile(r"[^a-z0-9-]+")


def network_name(run_uuid: str, suffix: str) -> str:
    """The network of one attempt of one run (a retry gets a new suffix)."""
    return _LABEL.sub("-", f"plx-{run_uuid[:12]}-{suffix}".lower())


def replica_hostname(run_uuid: str, replica: str) -> str:
    """``plx-<run>-<type>-<index>``: a replica's name on its run's network, as the pod
    ``<job>-<type>-<index>`` is in a cluster (a DNS label: lower case, at most 63 chars)."""
    host = _LABEL.sub("-", f"plx-{run_uuid[:12]}-{replica}".lower()).strip("-")
    return host[:63].rstrip("-")


def network_create_argv(cli: str, name: str, labels: Mapping[str, str]) -> list[str]:
    """``CLI network create --label K=V... NAME``: labelled as its containers are, so the
    reaper that removes them removes it too."""
    argv = [cli, "network", "create"]
    for key, value in sorted(labels.items()):
        argv += ["--label", f"{key}={value}"]
    return [*argv, name]


def static_addresses(subnet: str, hosts: Sequence[str]) -> dict[str, str]:
    """An address of ``subnet`` for each host, after the gateway (the subnet's first address).

    Raises:
        ValueError: ``subnet`` is not an IPv4/IPv6 network, or too small for ``hosts``.
    """
    network = ipaddress.ip_network(subnet, strict=False)
    usable = network.hosts()
    next(usable, None)  # the gateway
    addresses: dict[str, str] = {}
    for host in hosts:
        address = next(usable, None)
        if address is None:
            raise ValueError(f"subnet {subnet} has no address left for {host}")
        addresses[host] = str(address)
    return addresses
