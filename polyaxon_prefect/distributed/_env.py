"""The environment each Kubeflow operator injects into a replica, computed without a cluster.

Every backend must give a replica the same variables the operator would (a training script
written for Kubeflow reads ``TF_CONFIG`` or ``RANK``, whoever started it), so the contract lives
here once, one builder per kind in `ENV`, and only the *addresses* differ per backend: loopback
``127.0.0.1:<free port>`` for local processes (`loopback_cluster`), headless-service DNS names
for native Kubernetes (`service_cluster`). The sources are the training operator's
``controller.v1/<framework>`` code (see the reference notes, part B1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from polyaxon_prefect.distributed._topology import Replica, ReplicaPlan
from polyaxon_prefect.specs import MPIJob, PytorchElasticPolicy, PytorchJob

__all__ = [
    "DEFAULT_PORTS",
    "ENV",
    "Cluster",
    "EnvBuilder",
    "loopback_cluster",
    "mpi_hostfile",
    "named_cluster",
    "replica_env",
    "service_cluster",
    "torchrun_env",
]

DEFAULT_PORTS: dict[str, int] = {
    "tfjob": 2222,
    "pytorchjob": 23456,
    "mxjob": 9091,
    "mpijob": 9999,
    "xgbjob": 9999,
    "paddlejob": 36543,
}
"""The port each operator opens on a replica (``*_types.go``), used for in-cluster addresses."""

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Cluster:
    """Where each replica listens (host and port by replica name), and the job's identity."""

    hosts: Mapping[str, str]
    ports: Mapping[str, int]
    job_id: str
    kubernetes: bool = False
    """In a cluster: adds the variables that only make sense there (``DMLC_USE_KUBERNETES``)."""
    hostfile: str | None = None
    """Where the MPI hostfile (`mpi_hostfile`) is, for the launcher's environment."""

    def host(self, replica: Replica) -> str:
        return self.hosts[replica.name]

    def port(self, replica: Replica) -> int:
        return self.ports[replica.name]

    def address(self, replica: Replica) -> str:
        return f"{self.host(replica)}:{self.port(replica)}"


def loopback_cluster(plan: ReplicaPlan, ports: Sequence[int], job_id: str) -> Cluster:
    """Every replica on this machine, each on its own port (``ports`` by rank)."""
    if len(ports) != plan.size:
        raise ValueError(f"{plan.size} replicas need {plan.size} ports, got {len(ports)}")
    names = [r.name for r in plan.replicas]
    return Cluster(dict.fromkeys(names, LOOPBACK), dict(zip(names, ports, strict=True)), job_id)


def named_cluster(plan: ReplicaPlan, hosts: Mapping[str, str], job_id: str) -> Cluster:
    """Each replica at its own host (``hosts`` by replica name: its container's name on the
    run's network), all on the kind's usual port, as in a cluster."""
    port = DEFAULT_PORTS.get(plan.kind, 2222)
    chosen = {r.name: hosts[r.name] for r in plan.replicas}
    return Cluster(chosen, dict.fromkeys(chosen, port), job_id)


def service_cluster(
    plan: ReplicaPlan, job: str, namespace: str, port: int | None = None
) -> Cluster:
    """Each replica behind its stable DNS name ``{job}-{type}-{index}.{namespace}.svc``, on the
    operator's port (the Kubeflow endpoints)."""
    port = port if port is not None else DEFAULT_PORTS.get(plan.kind, 2222)
    hosts = {r.name: f"{job}-{r.type}-{r.index}.{namespace}.svc" for r in plan.replicas}
    return Cluster(hosts, dict.fromkeys(hosts, port), job, kubernetes=True)


EnvBuilder = Callable[[ReplicaPlan, Replica, Cluster], dict[str, str]]


def replica_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """The variables ``replica`` gets from its kind's operator (`ENV`); none for other kinds."""
    builder = ENV.get(plan.kind)
    return builder(plan, replica, cluster) if builder is not None else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _addresses(plan: ReplicaPlan, cluster: Cluster) -> dict[str, list[str]]:
    """Each group's replica addresses by index, groups in the kind's order."""
    return {g.type: [cluster.address(r) for r in plan.of_type(g.type)] for g in plan.groups}


def torchrun_env(plan: ReplicaPlan, replica: Replica) -> dict[str, str]:
    """What torchrun gives each worker beside ``RANK``/``WORLD_SIZE`` (``LOCAL_RANK``,
    ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``ROLE_RANK``...), for a script written for torchrun,
    on a PyTorch job run locally: each replica is one process, its "node"'s only one, and sees
    only its own GPUs, so its local rank is 0 (the Kubeflow operator sets none of these; with
    ``nprocPerNode`` the replica's own torchrun sets them again for its workers)."""
    if plan.kind != "pytorchjob":
        return {}
    per_node = getattr(plan.run, "n_proc_per_node", None)
    nproc = _int(per_node) or 1
    return {
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": str(replica.rank),
        "GROUP_WORLD_SIZE": str(plan.size),
        "ROLE_NAME": "default",
        "ROLE_RANK": str(replica.rank),
        "ROLE_WORLD_SIZE": str(plan.size * nproc),
    }


# --- TensorFlow ----------------------------------------------------------------------------------


def tf_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """``TF_CONFIG`` (cluster of every replica type, this task's type and index), set only
    when the job is distributed, like the operator's ``SetClusterSpec``."""
    if plan.size < 2:
        return {}
    config = {
        "cluster": _addresses(plan, cluster),
        "task": {"type": replica.type, "index": replica.index},
        "environment": "cloud",
    }
    return {"TF_CONFIG": json.dumps(config, separators=(",", ":"))}


# --- PyTorch -------------------------------------------------------------------------------------


def torch_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """``MASTER_ADDR``/``MASTER_PORT`` of the main replica, ``WORLD_SIZE``, ``RANK``, and the
    ``PET_*`` defaults torchrun reads (``nprocPerNode``, elastic rendezvous)."""
    match plan.run:
        case PytorchJob(n_proc_per_node=per_node, elastic_policy=elastic):
            nproc = _int(per_node)
        case _:
            nproc, elastic = None, None
    master = plan.main
    env = {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": cluster.host(master),
        "MASTER_PORT": str(cluster.port(master)),
        "WORLD_SIZE": str(plan.size * (nproc or 1)),
        "RANK": str(replica.rank),
        "PET_MASTER_ADDR": cluster.host(master),
        "PET_MASTER_PORT": str(cluster.port(master)),
        "PET_NODE_RANK": str(replica.rank),
        "PET_NNODES": str(plan.size),
    }
    if nproc is not None:
        env["PET_NPROC_PER_NODE"] = str(nproc)
    if elastic is not None:
        env.update(_torch_elastic(plan, elastic, cluster))
    return env


def _torch_elastic(
    plan: ReplicaPlan, elastic: PytorchElasticPolicy, cluster: Cluster
) -> dict[str, str]:
    low = _int(elastic.min_replicas)
    high = _int(elastic.max_replicas)
    host = elastic.rdvz_host or cluster.host(plan.main)
    port = _int(elastic.rdvz_port) or cluster.port(plan.main)
    env = {
        "PET_NNODES": f"{low or plan.size}:{high or plan.size}",
        "PET_RDZV_BACKEND": str(elastic.rdvz_backend or "c10d"),
        "PET_RDZV_ENDPOINT": f"{host}:{port}",
        "PET_RDZV_ID": str(elastic.rdvz_id or cluster.job_id),
    }
    restarts = _int(elastic.max_restarts)
    if restarts is not None:
        env["PET_MAX_RESTARTS"] = str(restarts)
    nproc = _int(elastic.n_proc_per_node)
    if nproc is not None:
        env["PET_NPROC_PER_NODE"] = str(nproc)
    if elastic.standalone is True:
        env["PET_STANDALONE"] = "true"
    return env


# --- MXNet ---------------------------------------------------------------------------------------


def dmlc_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """ps-lite's ``DMLC_*`` (the scheduler is the root) and the operator's ``MX_CONFIG``."""
    root = (plan.of_type("scheduler") or (plan.main,))[0]
    mx_config = {
        "cluster": {g.type: _mx_endpoints(plan, g.type, cluster) for g in plan.groups},
        "labels": {g.type: "" for g in plan.groups},
        "task": {"type": replica.type, "index": replica.index},
    }
    env = {
        "MX_CONFIG": json.dumps(mx_config, separators=(",", ":")),
        "DMLC_PS_ROOT_URI": cluster.host(root),
        "DMLC_PS_ROOT_PORT": str(cluster.port(root)),
        "DMLC_NUM_SERVER": str(plan.count("server")),
        "DMLC_NUM_WORKER": str(plan.count("worker")),
        "DMLC_ROLE": replica.type,
    }
    role_id = {"worker": "DMLC_WORKER_ID", "server": "DMLC_SERVER_ID"}.get(replica.type)
    if role_id is not None:
        env[role_id] = str(replica.index)
    if cluster.kubernetes:
        env["DMLC_USE_KUBERNETES"] = "1"
    return env


# --- MPI -----------------------------------------------------------------------------------------


def _mx_endpoints(plan: ReplicaPlan, type_: str, cluster: Cluster) -> list[dict[str, object]]:
    return [{"url": cluster.host(r), "port": cluster.port(r)} for r in plan.of_type(type_)]


def mpi_hostfile(plan: ReplicaPlan, cluster: Cluster) -> str:
    """The operator's ``/etc/mpi/hostfile``: one ``<host> slots=<slotsPerWorker>`` line per
    worker; workers sharing a host (all of them, locally) make one line with their slots added."""
    slots = (_int(plan.run.slots_per_worker) if isinstance(plan.run, MPIJob) else None) or 1
    workers = plan.of_type("worker") or (plan.main,)
    per_host: dict[str, int] = {}
    for worker in workers:
        per_host[cluster.host(worker)] = per_host.get(cluster.host(worker), 0) + slots
    return "".join(f"{host} slots={count}\n" for host, count in per_host.items())


def mpi_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """Open MPI's default hostfile (the launcher's ``mpirun`` reads it)."""
    if cluster.hostfile is None:
        return {}
    return {"OMPI_MCA_orte_default_hostfile": cluster.hostfile}


# --- XGBoost and Paddle --------------------------------------------------------------------------


def xgboost_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """The operator's rabit tracker contract (``controller.v1/xgboost/xgboost.go``): the
    master's address, world size, rank, and with more than one replica (LightGBM's) the worker
    port and the workers' hosts; locally each replica has its own port, so ``WORKER_PORT`` is
    this replica's."""
    master = plan.main
    env = {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": cluster.host(master),
        "MASTER_PORT": str(cluster.port(master)),
        "WORLD_SIZE": str(plan.size),
        "RANK": str(replica.rank),
    }
    if plan.size > 1:
        env["WORKER_PORT"] = str(cluster.port(replica))
        env["WORKER_ADDRS"] = ",".join(cluster.host(r) for r in plan.of_type("worker"))
    return env


def paddle_env(plan: ReplicaPlan, replica: Replica, cluster: Cluster) -> dict[str, str]:
    """The paddle operator's contract (``controller.v1/paddlepaddle/envvar.go``): the job's
    name and node count; ``PADDLE_MASTER`` is master 0 (parameter-server mode) or worker 0
    (collective mode, no ``master`` group), which the operator gives that pod as its own IP;
    in parameter-server mode each pod is one server (``PADDLE_SERVER_NUM=1`` on masters) or
    one trainer (``PADDLE_TRAINER_NUM=1`` on workers). No elastic variables: it sets none."""
    ps_mode = plan.group("master") is not None
    master = (plan.of_type("master") if ps_mode else plan.of_type("worker")) or (plan.main,)
    env = {
        "PYTHONUNBUFFERED": "1",
        "PADDLE_JOB_ID": cluster.job_id,
        "PADDLE_NNODES": str(plan.size),
        "PADDLE_MASTER": cluster.address(master[0]),
    }
    if ps_mode:
        env["PADDLE_SERVER_NUM" if replica.type == "master" else "PADDLE_TRAINER_NUM"] = "1"
    return env


ENV: dict[str, EnvBuilder] = {
    "tfjob": tf_env,
    "pytorchjob": torch_env,
    "mxjob": dmlc_env,
    "mpijob": mpi_env,
    "xgbjob": xgboost_env,
    "paddlejob": paddle_env,
}
"""The operator's environment contract of each distributed kind."""
