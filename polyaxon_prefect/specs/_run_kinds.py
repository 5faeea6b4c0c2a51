"""Facts about each ``run`` kind, derived from the run models so they are written once.

What keys a ``run:`` section of a kind accepts, which of them are replica groups and which
replica leads: a preset's ``runPatch``, the DAG planner and the legacy converter ask here
instead of keeping their own lists.
"""

from __future__ import annotations

from functools import cache

from ._base import BaseSpec
from ._dag import Dag
from ._runs import MAIN_REPLICAS, NON_DAG_RUNTIMES, REPLICA_NAMES

__all__ = ["RUN_MODELS", "main_replica", "replica_names", "run_keys", "spec_keys"]

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
