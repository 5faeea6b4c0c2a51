"""The replica groups of a distributed run (with their pod counts) and the target a run's
objects are named and labelled for: what both backends start from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import KFReplica, Termination, main_replica, replica_fields
from polyaxon_prefect.specs.sections._run_spec import NonDagRuntime

from ._names import LABEL_MANAGED_BY, LABEL_REPLICA, LABEL_RUN, label_value

__all__ = ["RUN_PATH", "Group", "Target", "main_group", "replica_groups"]

RUN_PATH: tuple[str, ...] = ("component", "run")
"""Where the run section sits in a loaded operation (problems are located from there)."""


@dataclass(frozen=True)
class Group:
    """One replica group: its YAML name, its spec, how many pods, where it is written."""

    name: str
    replica: KFReplica
    count: int
    path: tuple[str | int, ...]


def replica_groups(run: NonDagRuntime) -> tuple[list[Group], list[Problem]]:
    """The Kubeflow-style groups ``run`` sets, in declaration order, and the problems found
    (a count that is still a template cannot be turned into pods)."""
    groups: list[Group] = []
    problems: list[Problem] = []
    for name, replica in replica_fields(run).items():
        path = (*RUN_PATH, name)
        if not isinstance(replica, KFReplica):
            problems.append(
                Problem(
                    f"replica group `{name}` of a {run.kind} has no Kubernetes manifest here",
                    rule="k8s_unsupported_replica",
                    path=path,
                    hint="Ray and Dask clusters are run by their own operators",
                )
            )
            continue
        count = replica.replica_count
        if count is None:
            problems.append(
                Problem(
                    f"`{name}.replicas` is still a template, so its pods cannot be listed",
                    rule="k8s_templated_replicas",
                    path=(*path, "replicas"),
                    value=replica.replicas,
                    hint="give the param a value with `-P name=value`",
                )
            )
            continue
        groups.append(Group(name, replica, count, path))
    return groups, problems


def main_group(run: NonDagRuntime) -> str:
    """The group whose pod 0 speaks for the run (its outputs are the run's): the kind's
    chief/master/launcher when the file has one, else ``worker``."""
    names = list(replica_fields(run))
    main = main_replica(run.kind)
    if main in names:
        return str(main)
    return "worker" if "worker" in names or not names else names[0]


@dataclass(frozen=True)
class Target:
    """Where and under which name a run's objects go, and what its pods may mount."""

    name: str
    """The base name (`_names.base_name`) every object of the run derives from."""
    namespace: str | None = None
    termination: Termination | None = None
    connections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    artifacts_store: Mapping[str, Any] | None = None
    init_root: str = "/plx-context/artifacts"
    """Where init steps without a ``path`` write: the pods' ``globals.artifacts_path`` when
    the run is known (`_mounts.add_init`)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The run's tracking contract, for the pod that hands the outputs back."""
    handback: Any = None
    """The `_job.PodHandback` of the pod that hands the outputs back (None: none does)."""

    def labels(self, replica: str | None = None) -> dict[str, str]:
        """The labels that select this run's objects (and one replica group's pods)."""
        labels = {LABEL_MANAGED_BY: "polyaxon-prefect", LABEL_RUN: self.name}
        if replica is not None:
            labels[LABEL_REPLICA] = label_value(replica)
        return labels

    def metadata(self, name: str, replica: str | None = None) -> dict[str, Any]:
        """``metadata`` of an object called ``name``."""
        metadata: dict[str, Any] = {"name": name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        metadata["labels"] = self.labels(replica)
        return metadata
