"""Facts about each ``run`` kind, derived from the run models so they are written once.

What keys a ``run:`` section of a kind accepts, which of them are replica groups and which
replica leads: a preset's ``runPatch``, the DAG planner and the legacy converter ask here
instead of keeping their own lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._polyaxonfile import Dag
from polyaxon_prefect.specs.sections._run_spec import (
    MAIN_REPLICAS,
    NON_DAG_RUNTIMES,
    REPLICA_NAMES,
    Job,
    RayCluster,
    RayReplica,
)

__all__ = [
    "RUN_MODELS",
    "main_replica",
    "replica_names",
    "replica_patch_keys",
    "replica_paths",
    "run_keys",
    "spec_keys",
]

_RUNTIMES: tuple[type[BaseSpec], ...] = (*NON_DAG_RUNTIMES, Dag)

RUN_MODELS: dict[str, type[BaseSpec]] = {
    model.model_fields["kind"].default: model for model in _RUNTIMES
}
"""The model of each ``run.kind``."""


@cache
def spec_keys(model: type[BaseSpec]) -> frozenset[str]:
    """The YAML (camelCase) keys ``model`` accepts."""
    return frozenset(info.alias or name for name, info in model.model_fields.items())


def run_keys(kind: str) -> frozenset[str] | None:
    """The YAML keys of a ``run:`` section of ``kind`` (``kind`` included); None for a kind
    that does not exist."""
    model = RUN_MODELS.get(kind)
    return spec_keys(model) if model is not None else None


def replica_names(kind: str) -> tuple[str, ...]:
    """The YAML names of the replica sections of ``kind``, in declaration order; empty for a
    kind that is not distributed (``raycluster``'s ``workers`` maps group names to replicas)."""
    return REPLICA_NAMES.get(kind, ())


def main_replica(kind: str) -> str | None:
    """The YAML name of the replica that leads a ``kind`` run (``chief``, ``master``,
    ``launcher``...); None for a kind that is not distributed."""
    return MAIN_REPLICAS.get(kind)


def replica_patch_keys(kind: str) -> frozenset[str] | None:
    """The YAML keys a ``runPatch`` may set on every replica of a ``kind`` run; None for a kind
    without replicas. A replica is a pod plus its ``replicas`` count (a group's
    ``indexOverrides`` tune single pods and are not patched across groups); a Ray worker group
    adds its scaling fields."""
    if kind not in REPLICA_NAMES:
        return None
    if RUN_MODELS[kind] is RayCluster:
        return spec_keys(RayReplica)
    return spec_keys(Job) - {"kind"} | {"replicas"}


def replica_paths(kind: str, run: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Where the replicas of the raw ``run`` section of ``kind`` are (YAML keys), for the ones
    it sets: one key per replica, ``("workers", <group>)`` per Ray worker group."""
    if RUN_MODELS.get(kind) is RayCluster:
        paths: list[tuple[str, ...]] = [("head",)] if run.get("head") is not None else []
        workers = run.get("workers")
        if isinstance(workers, Mapping):
            paths += [("workers", group) for group, spec in workers.items() if spec is not None]
        return paths
    return [(name,) for name in replica_names(kind) if run.get(name) is not None]
