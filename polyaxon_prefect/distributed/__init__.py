"""Distributed runs without a process or a cluster: the replica topology and its contracts.

Pure (imports only `polyaxon_prefect.specs` and `polyaxon_prefect.exceptions`) because two
backends share it: the local runtime starts one process per replica (`runtime/_replicas.py`),
the Kubernetes builders one pod per replica, and both must give each replica the same
environment (``TF_CONFIG``, ``RANK``/``WORLD_SIZE``, ``DMLC_*``, the MPI hostfile) and end the
job by the same rules.
"""

from polyaxon_prefect.distributed._env import (
    DEFAULT_PORTS,
    ENV,
    Cluster,
    EnvBuilder,
    loopback_cluster,
    mpi_hostfile,
    named_cluster,
    replica_env,
    service_cluster,
    torchrun_env,
)
from polyaxon_prefect.distributed._gpu_pool import (
    NO_GPU_HINT,
    SHARING_ENV,
    Slot,
    capacity_problem,
    choose,
    container_gpus,
    looks_for_cuda,
    machine_gpus,
    parse_nvidia_smi,
    sharing,
    slots,
    visible_env,
    wait_reason,
)
from polyaxon_prefect.distributed._gpus import (
    GPU_KEYS,
    NotEnoughGpusError,
    gpu_request,
    gpu_slices,
)
from polyaxon_prefect.distributed._success import Decision, decide, deciders
from polyaxon_prefect.distributed._topology import Replica, ReplicaGroup, ReplicaPlan, plan_replicas

__all__ = [
    "DEFAULT_PORTS",
    "ENV",
    "GPU_KEYS",
    "NO_GPU_HINT",
    "SHARING_ENV",
    "Cluster",
    "Decision",
    "EnvBuilder",
    "NotEnoughGpusError",
    "Replica",
    "ReplicaGroup",
    "ReplicaPlan",
    "Slot",
    "capacity_problem",
    "choose",
    "container_gpus",
    "decide",
    "deciders",
    "gpu_request",
    "gpu_slices",
    "looks_for_cuda",
    "loopback_cluster",
    "machine_gpus",
    "mpi_hostfile",
    "named_cluster",
    "parse_nvidia_smi",
    "plan_replicas",
    "replica_env",
    "service_cluster",
    "sharing",
    "slots",
    "torchrun_env",
    "visible_env",
    "wait_reason",
]
