"""What the ``docker`` backend adds for the distributed kinds: the run's network and keys.

The replicas are prepared and launched exactly as on the local backend
(`polyaxon_prefect.runtime._replicas`: the same plan, the same env contract, the same
decisions when one ends); the container launcher starts each replica's process as a
container of its image. The run gets a network of its own
(`polyaxon_prefect.runtime.docker._container_network`): each replica's container is named
``plx-<run>-<type>-<index>`` on it, as its pod is in a cluster, and the contract names those
hosts on the framework's usual port (``MASTER_ADDR=plx-<run>-master-0``, ``MASTER_PORT=23456``),
resolved by the network's DNS or, where it has none (Podman's CNI backend), by a static address
per replica and ``/etc/hosts`` entries. Where no network can be created, the containers share
the host's network on the loopback ports of the local backend, and one line says so. The
network is removed with the containers whatever ended the run (the reaper removes both by
label). A replica's GPUs (its slice of this machine's, as locally) become its devices, seen
inside as ``0..n-1``.

An ``mpijob`` runs as the MPI operator (v2) runs it: the launcher and every worker are
containers of their images on the run's network; the launcher's ``mpirun`` gets the hostfile
naming the workers' hostnames (``plx-<run>-worker-0 slots=N``) and reaches them over SSH, which
the images bring (workers usually run ``/usr/sbin/sshd -De``): a key pair made for the run is
mounted in every replica at `SSH_DIR` (``id_rsa``, ``id_rsa.pub``, ``authorized_keys``,
the operator's secret), with the operator's ``OMPI_MCA_plm_rsh_args``. The job ends with the
launcher; the workers are stopped then.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

from polyaxon_prefect.containers import ContainerRun, Mount
from polyaxon_prefect.runtime.docker._container_cli import ContainerCli, key_folder
from polyaxon_prefect.runtime.docker._container_network import (
    NetworkError,
    RunNetwork,
    open_network,
)

__all__ = [
    "CONTAINER_REPLICA_KINDS",
    "REPLICA_PULL",
    "RSH_ARGS",
    "SSH_DIR",
    "make_ssh_keys",
    "on_network",
    "open_run_network",
    "ssh_mounts",
]

REPLICA_PULL = "missing"
"""Replicas pull as ``IfNotPresent`` (their ``imagePullPolicy`` is not read yet)."""
CONTAINER_REPLICA_KINDS = ("tfjob", "pytorchjob", "mxjob", "xgbjob", "paddlejob", "mpijob")
SSH_DIR = "/root/.ssh"
"""Where every MPI replica finds the run's key pair: a path inside the image (root's
``.ssh``), the MPI operator's default ``sshAuthMountPath``, so images made for the operator
find their keys where they expect them."""
RSH_ARGS = "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
"""``OMPI_MCA_plm_rsh_args``: the operator's retries while the workers' sshd starts; the
hosts are new on every run, so no known host key can be checked."""


def on_network(spec: ContainerRun, network: RunNetwork | None, replica: str) -> ContainerRun:
    """``spec`` on the host's network, or on the run's under the replica's hostname (with
    its static address and every replica's ``/etc/hosts`` entry, where there is no DNS)."""
    if network is None:
        return dataclasses.replace(spec, network="host")
    host = network.hostnames[replica]
    return dataclasses.replace(
        spec,
        network=network.name,
        hostname=host,
        aliases=(host,),
        ip=network.addresses.get(host),
        hosts=dict(network.addresses),
    )


def ssh_mounts(keys: str | None) -> tuple[Mount, ...]:
    return (Mount(keys, SSH_DIR, read_only=True),) if keys else ()


def make_ssh_keys() -> tuple[str | None, str | None]:
    """An MPI job's key pair, in a private folder outside the artifacts (a secret): the
    folder, or None and the line saying why the images' own SSH setup is left to work alone."""
    folder = key_folder()
    key = Path(folder) / "id_rsa"
    try:
        made = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-C", "mpi", "-f", str(key)],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"no SSH key pair for mpirun ({exc}): the images' own SSH setup is used"
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"no SSH key pair for mpirun ({made.stderr.strip()}): the images' own is used"
    shutil.copyfile(f"{key}.pub", Path(folder) / "authorized_keys")
    (Path(folder) / "authorized_keys").chmod(0o600)
    return folder, None


def open_run_network(
    cli: ContainerCli, run: str, suffix: str, replicas: list[str], labels: dict[str, str]
) -> tuple[RunNetwork | None, str | None]:
    """The run's network, or None and the line saying why the replicas share the host's."""
    try:
        return open_network(cli, run, suffix, replicas, labels), None
    except NetworkError as exc:
        return None, f"no network of its own for this run ({exc}): replicas share the host's"
