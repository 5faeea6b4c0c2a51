"""The distributed env contract for pods started without an operator (the native backend).

Kubeflow's operator injects ``TF_CONFIG``, ``MASTER_ADDR``/``RANK``/``WORLD_SIZE`` and
``DMLC_*`` itself; an Indexed Job only gives each pod ``JOB_COMPLETION_INDEX``. The variables
themselves come from the one contract the local backend uses too
(`polyaxon_prefect.distributed.replica_env`), computed for every replica of a Job with the
pods' stable DNS names under the run's headless Service; this module only *encodes* them for
an Indexed Job: what is the same for all of a Job's pods is a plain env var, what depends on
the pod's index is one ``sh`` line run before the command, written compactly when the values
differ only by the index (``RANK``, the task index inside ``TF_CONFIG``), else as a ``case``
on the index. ``$i`` is the pod's index in its replica group.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from polyaxon_prefect.distributed import Cluster, Replica, ReplicaPlan, replica_env

__all__ = [
    "ENV_SCRIPT_NAME",
    "NATIVE_KINDS",
    "EnvContract",
    "native_contract",
    "service_hosts",
    "wrap_command",
]

ENV_SCRIPT_NAME = "polyaxon-prefect-env"
"""``$0`` of the wrapper shell (what ``ps`` shows)."""

NATIVE_KINDS = frozenset({"tfjob", "pytorchjob", "xgbjob", "mxjob", "paddlejob"})
"""The kinds the native backend runs (MPI needs the operator's launcher)."""


@dataclass(frozen=True)
class EnvContract:
    """Env vars the same for a Job's pods, and ``sh`` lines that export the per-index ones."""

    static: dict[str, str]
    lines: tuple[str, ...] = ()


def _common_prefix(texts: Sequence[str]) -> str:
    """The longest text every one of ``texts`` starts with (character by character)."""
    shortest = min(texts, key=len)
    for end, char in enumerate(shortest):
        if any(text[end] != char for text in texts):
            return shortest[:end]
    return shortest


def _index_line(name: str, values: Sequence[str], first: int) -> str:
    """``export NAME=...`` for ``values`` (index ``first + k`` has ``values[k]``): the text
    around the one spot where they differ, with that spot computed from ``$i`` when it is the
    index plus a constant; else a ``case`` over the indexes."""
    if len(values) > 1:
        prefix = _common_prefix(values)
        suffix = _common_prefix([v[len(prefix) :][::-1] for v in values])[::-1]
        middles = [v[len(prefix) : len(v) - len(suffix)] for v in values]
        if all(m.isdigit() for m in middles):
            shift = int(middles[0]) - first
            if all(int(m) == first + k + shift for k, m in enumerate(middles)):
                number = f'"$((i + {shift}))"' if shift else '"$i"'
                head = shlex.quote(prefix) if prefix else ""
                tail = shlex.quote(suffix) if suffix else ""
                return f"export {name}={head}{number}{tail}"
    cases = " ".join(f"{first + k}) {name}={shlex.quote(v)};;" for k, v in enumerate(values))
    return f'case "$i" in {cases} esac; export {name}'


def native_contract(
    plan: ReplicaPlan, replicas: Sequence[Replica], cluster: Cluster
) -> EnvContract:
    """The env of one Indexed Job whose pods are ``replicas`` (consecutive indexes of one
    group), from the shared contract."""
    envs = [replica_env(plan, replica, cluster) for replica in replicas]
    names = list(envs[0])
    static = {n: envs[0][n] for n in names if all(env.get(n) == envs[0][n] for env in envs)}
    first = replicas[0].index
    lines = tuple(
        _index_line(name, [env[name] for env in envs], first)
        for name in names
        if name not in static
    )
    return EnvContract(static, lines)


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


def service_hosts(addresses: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Replica name (``worker-3``) -> its pod's DNS name, from each group's addresses."""
    return {
        f"{group}-{index}": host
        for group, hosts in addresses.items()
        for index, host in enumerate(hosts)
    }
