"""The distributed env contract for pods started without an operator (the native backend).

Kubeflow's operator injects ``TF_CONFIG``, ``MASTER_ADDR``/``RANK``/``WORLD_SIZE`` and
``DMLC_*`` itself; an Indexed Job only gives each pod ``JOB_COMPLETION_INDEX``. Everything that
is the same for a Job's pods is a plain env var computed here from the topology (the addresses
are the pods' stable DNS names under the run's headless Service); what depends on the pod's
index is a few ``sh`` lines run before the command, with ``$i`` the pod's index in its group.

One small function per framework in `ENV`: the shared ``distributed`` package (the same tables
for the local backend) can replace it without touching the manifest builders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ENV", "ENV_SCRIPT_NAME", "EnvContract", "Topology", "wrap_command"]

ENV_SCRIPT_NAME = "polyaxon-prefect-env"
"""``$0`` of the wrapper shell (what ``ps`` shows)."""


@dataclass(frozen=True)
class Topology:
    """The replica groups of one run: how many pods and their ``host:port`` addresses."""

    kind: str
    port: int
    addresses: Mapping[str, Sequence[str]]
    """Group YAML name -> the DNS name of each index, in group order."""

    def count(self, group: str) -> int:
        return len(self.addresses.get(group, ()))

    def first(self, *groups: str) -> str:
        """The address of index 0 of the first group among ``groups`` that has pods."""
        for group in groups:
            if self.addresses.get(group):
                return self.addresses[group][0]
        return next(iter(next(iter(self.addresses.values()))))

    def rank_base(self, group: str, order: Sequence[str]) -> int:
        """The global rank of index 0 of ``group`` when ranks go through ``order``."""
        base = 0
        for name in order:
            if name == group:
                return base
            base += self.count(name)
        return base


@dataclass(frozen=True)
class EnvContract:
    """Env vars the same for a Job's pods, and ``sh`` lines that export the per-index ones."""

    static: dict[str, str]
    lines: tuple[str, ...] = ()


def _tf(top: Topology, group: str) -> EnvContract:
    cluster = {name: [f"{a}:{top.port}" for a in addrs] for name, addrs in top.addresses.items()}
    task = f'{{\\"type\\":\\"{group}\\",\\"index\\":$i}}'
    line = (
        'export TF_CONFIG="{\\"cluster\\":$TF_CLUSTER_JSON,\\"task\\":'
        f'{task},\\"environment\\":\\"cloud\\"}}"'
    )
    return EnvContract({"TF_CLUSTER_JSON": json.dumps(cluster, separators=(",", ":"))}, (line,))


def _torch(top: Topology, group: str) -> EnvContract:
    total = sum(top.count(name) for name in top.addresses)
    master = top.first("master", "worker")
    base = top.rank_base(group, ("master", "worker"))
    static = {
        "MASTER_ADDR": master,
        "MASTER_PORT": str(top.port),
        "WORLD_SIZE": str(total),
        "PET_MASTER_ADDR": master,
        "PET_MASTER_PORT": str(top.port),
        "PET_NNODES": str(total),
        "PYTHONUNBUFFERED": "1",
    }
    return EnvContract(static, (f"export RANK=$(({base} + i)) PET_NODE_RANK=$(({base} + i))",))


def _xgboost(top: Topology, group: str) -> EnvContract:
    contract = _torch(top, group)
    workers = ",".join(top.addresses.get("worker", ()))
    static = {**contract.static, "WORKER_PORT": str(top.port), "WORKER_ADDRS": workers}
    return EnvContract(static, contract.lines)


def _mxnet(top: Topology, group: str) -> EnvContract:
    role = {"scheduler": "scheduler", "server": "server"}.get(group, "worker")
    static = {
        "DMLC_PS_ROOT_URI": top.first("scheduler"),
        "DMLC_PS_ROOT_PORT": str(top.port),
        "DMLC_NUM_SERVER": str(top.count("server")),
        "DMLC_NUM_WORKER": str(top.count("worker")),
        "DMLC_ROLE": role,
        "DMLC_USE_KUBERNETES": "1",
    }
    lines = {"worker": ("export DMLC_WORKER_ID=$i",), "server": ("export DMLC_SERVER_ID=$i",)}
    return EnvContract(static, lines.get(role, ()))


def _paddle(top: Topology, group: str) -> EnvContract:
    total = sum(top.count(name) for name in top.addresses)
    base = top.rank_base(group, ("master", "worker"))
    static = {
        "PADDLE_MASTER": f"{top.first('master', 'worker')}:{top.port}",
        "PADDLE_NNODES": str(total),
        "PADDLE_TRAINER_NUM": str(top.count("worker")),
    }
    return EnvContract(static, (f"export PADDLE_TRAINER_ID=$(({base} + i))",))


ENV: dict[str, Callable[[Topology, str], EnvContract]] = {
    "tfjob": _tf,
    "pytorchjob": _torch,
    "xgbjob": _xgboost,
    "mxjob": _mxnet,
    "paddlejob": _paddle,
}
"""The env contract of each kind the native backend runs (MPI needs the operator's launcher)."""


def wrap_command(
    command: Sequence[str] | None, args: Sequence[str] | None, lines: Sequence[str]
) -> list[str] | None:
    """``command`` + ``args`` run by a ``sh`` that first exports the per-index env; None when
    there is no command to wrap (the image's entrypoint runs with the static env only)."""
    if not command:
        return None
    prelude = [
        "i=$((POLYAXON_PREFECT_REPLICA_OFFSET + ${JOB_COMPLETION_INDEX:-0}))",
        "export POLYAXON_PREFECT_REPLICA_INDEX=$i",
        *lines,
        'exec "$@"',
    ]
    return ["/bin/sh", "-c", "; ".join(prelude), ENV_SCRIPT_NAME, *command, *(args or [])]
