"""Local containers, pure part: the ``docker run`` / ``podman run`` command line of an op.

No I/O here (`polyaxon_prefect.runtime.docker._container` runs the CLI): which flags an op's
``container`` maps to (image, ``workingDir``, ``imagePullPolicy``, ``resources``), the labels
every container of a run session carries (so a reaper can remove them by label), the mounts,
each distributed run's network and its replicas' hostnames (`_network`), and which variables
of the op's environment reach the container (by name only: their values travel in the CLI's
environment, never on its command line).
"""

from __future__ import annotations

from ._network import network_create_argv, network_name, replica_hostname, static_addresses
from ._run import (
    CLI_ENV,
    CLIS,
    LABEL_PID,
    LABEL_RUN,
    LABEL_SESSION,
    ContainerRun,
    Mount,
    container_name,
    env_names,
    gpu_count,
    gpu_flags,
    parse_cpus,
    parse_memory,
    pull_flag,
    remove_argv,
    run_argv,
)

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
    "network_create_argv",
    "network_name",
    "parse_cpus",
    "parse_memory",
    "pull_flag",
    "remove_argv",
    "replica_hostname",
    "run_argv",
    "static_addresses",
]
