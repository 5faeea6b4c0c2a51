"""A distributed run spec as the replicas that run it: the pure `ReplicaPlan`.

The local runtime and the Kubernetes backends need the same answer to "which processes (pods)
make this job, and who leads it", so it is computed once here from the run model alone (no
process, no cluster): each replica group with its count, the spec of each replica with its
``indexOverrides`` merged (legacy files tune single workers), the main replica and global ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.specs import MAIN_REPLICAS, KFReplica, replica_fields

__all__ = ["Replica", "ReplicaGroup", "ReplicaPlan", "plan_replicas"]

_FALLBACK_MAIN = "worker"
"""Who leads a job without its kind's main replica (a TFJob of workers and ps): worker 0."""


@dataclass(frozen=True)
class Replica:
    """One process (one pod) of a distributed run."""

    type: str
    """The YAML name of its group (``worker``, ``chief``, ``ps``...)."""
    index: int
    """Its index within the group (Kubeflow's replica index)."""
    rank: int
    """Its global rank: the main replica is 0, then the groups in their kind's order."""
    spec: KFReplica
    """The group's spec with this index's override merged."""

    @property
    def name(self) -> str:
        """``worker-1``: how logs, files and errors name it (Kubeflow's pod suffix)."""
        return f"{self.type}-{self.index}"


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica section of the run: ``count`` replicas built from ``spec``."""

    type: str
    count: int
    spec: KFReplica


@dataclass(frozen=True)
class ReplicaPlan:
    """Every replica of one distributed run, and who leads it."""

    kind: str
    run: Any
    """The run model (its kind's settings: ``nProcPerNode``, ``slotsPerWorker``...)."""
    groups: tuple[ReplicaGroup, ...]
    replicas: tuple[Replica, ...]
    """Every replica, by rank (the main replica first)."""
    main: Replica

    def group(self, type_: str) -> ReplicaGroup | None:
        """The group named ``type_``, if the run has one."""
        return next((g for g in self.groups if g.type == type_), None)

    def count(self, type_: str) -> int:
        """How many replicas of ``type_`` the run starts (0 without that group)."""
        found = self.group(type_)
        return found.count if found is not None else 0

    def of_type(self, type_: str) -> tuple[Replica, ...]:
        """The replicas of ``type_``, by index."""
        return tuple(r for r in self.replicas if r.type == type_)

    @property
    def size(self) -> int:
        """How many replicas (processes, pods) the run has."""
        return len(self.replicas)


def plan_replicas(run: object) -> ReplicaPlan:
    """The replicas of ``run`` (a Kubeflow run model: `TFJob`, `PytorchJob`, ...).

    Raises:
        PolyaxonfileError: the run has no replica group, or a group's count or spec is still a
            ``{{ template }}`` (rule ``replicas_not_rendered``): render the run first.
    """
    kind = str(getattr(run, "kind", ""))
    groups = tuple(_group(kind, name, spec) for name, spec in _kf_groups(run).items())
    if not groups:
        raise PolyaxonfileError(
            [
                Problem(
                    f"a {kind} run needs at least one replica to run",
                    rule="distributed_without_replicas",
                    path=("component", "run"),
                )
            ]
        )
    main_type = _main_type(kind, groups)
    ordered = sorted(groups, key=lambda g: g.type != main_type)  # stable: kind order otherwise
    replicas: list[Replica] = []
    for group in ordered:
        for index in range(group.count):
            spec = _with_override(group.spec, index)
            replicas.append(Replica(group.type, index, len(replicas), spec))
    return ReplicaPlan(kind, run, groups, tuple(replicas), replicas[0])


def _kf_groups(run: Any) -> dict[str, KFReplica]:
    """The Kubeflow replica groups the run sets; a templated group cannot be planned yet."""
    fields = replica_fields(run)
    for name in getattr(run, "REPLICAS", ()):
        value = getattr(run, name, None)
        if value is not None and not isinstance(value, KFReplica | dict):
            raise _not_rendered(name, "the group")
    return {name: spec for name, spec in fields.items() if isinstance(spec, KFReplica)}


def _group(kind: str, name: str, spec: KFReplica) -> ReplicaGroup:
    count = spec.replica_count
    if count is None:
        raise _not_rendered(name, "`replicas`")
    return ReplicaGroup(name, count, spec)


def _not_rendered(name: str, what: str) -> PolyaxonfileError:
    return PolyaxonfileError(
        [
            Problem(
                f"{what} of replica `{name}` is still a template",
                rule="replicas_not_rendered",
                path=("component", "run", name),
                hint="render the run with its params before planning its replicas",
            )
        ]
    )


def _main_type(kind: str, groups: tuple[ReplicaGroup, ...]) -> str:
    """The kind's leading group when present, else the workers, else the first group."""
    names = [g.type for g in groups]
    for candidate in (MAIN_REPLICAS.get(kind, ""), _FALLBACK_MAIN):
        if candidate in names:
            return candidate
    return names[0]


def _with_override(spec: KFReplica, index: int) -> KFReplica:
    """``spec`` with ``indexOverrides[index]`` merged: its environment's fields over the
    group's, its resources replacing the container's (`ReplicaOverride`)."""
    override = (spec.index_overrides or {}).get(index)
    if override is None:
        return spec
    update: dict[str, Any] = {}
    if override.environment is not None:
        if spec.environment is None or isinstance(spec.environment, str):
            update["environment"] = override.environment
        else:
            fields = override.environment.model_dump(exclude_unset=True, by_alias=False)
            changes = {k: getattr(override.environment, k) for k in fields}
            update["environment"] = spec.environment.model_copy(update=changes)
    container = spec.container
    if override.resources is not None and container is not None and not isinstance(container, str):
        update["container"] = container.model_copy(update={"resources": override.resources})
    return spec.model_copy(update=update)
