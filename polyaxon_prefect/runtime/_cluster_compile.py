"""``compile --target kubernetes`` and ``check --backend``: the manifests of every op of a file.

A job or distributed op has its own manifests; a DAG's are those of each of its ops that
becomes a pod (jobs and distributed kinds; a notifier or a nested pipeline stays with the
pipeline), in the DAG's order, each document annotated with its op (`OP_ANNOTATION`) so
``kubectl`` users can tell them apart in one stream. Templates are left as written: params and
``globals`` are rendered when a run is submitted (`runtime._cluster.prepare_cluster`).
Problems (a container with no image first among them) are located in the file of the op.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.kubernetes import CLUSTER_KINDS, Backend, build_manifests
from polyaxon_prefect.runtime._locate import locate_problems
from polyaxon_prefect.specs import dag_of

__all__ = ["OP_ANNOTATION", "cluster_manifests"]

OP_ANNOTATION = "polyaxon.com/op"
"""The annotation that names the op a manifest belongs to."""


def _annotated(manifests: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    for manifest in manifests:
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[OP_ANNOTATION] = op
    return manifests


def _one(
    loaded: Any,
    backend: Backend | None,
    options: Mapping[str, Any],
    prefix: tuple[str | int, ...] = (),
) -> tuple[list[dict[str, Any]], list[Problem]]:
    operation = loaded.operation
    component = operation.component
    name = operation.name or (component.name if component is not None else None) or "job"
    try:
        manifests = build_manifests(loaded, backend=backend, **options)
    except PolyaxonfileError as exc:
        problems = list(exc.problems)
        if prefix:  # a DAG op: where it sits in the DAG, and which it is
            problems = [
                replace(p.prefixed(prefix), message=f"op `{name}`: {p.message}") for p in problems
            ]
        return [], problems
    return _annotated(manifests, name), []


def cluster_manifests(
    loaded: Any,
    *,
    backend: Backend | None = None,
    namespace: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    artifacts_store: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every manifest ``loaded`` would create on ``backend``, in order, each annotated with
    its op.

    Raises:
        PolyaxonfileError: every problem of every op (a kind with no workload, a container
            with no image, an unknown connection...), located.
    """
    options: dict[str, Any] = {
        "namespace": namespace,
        "connections": connections,
        "artifacts_store": artifacts_store,
    }
    component = loaded.operation.component
    dag = dag_of(component.run if component is not None else None)
    if dag is None:
        manifests, found_problems = _one(loaded, backend, options)
        if found_problems:
            raise PolyaxonfileError(locate_problems(found_problems, loaded))
        return manifests
    from polyaxon_prefect.dag import child_loaded, plan_dag

    plan = plan_dag(loaded.operation)
    positions = {op.name: i for i, op in enumerate(dag.operation_list)}
    found: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for name in plan.order:
        op = plan.ops[name]
        op_run = op.component.run if op.component is not None else None
        if getattr(op_run, "kind", None) not in CLUSTER_KINDS:
            continue  # runs with the pipeline, not as a pod
        prefix = ("component", "run", "operations", positions.get(name, 0))
        manifests, op_problems = _one(child_loaded(loaded, op), backend, options, prefix)
        found += manifests
        problems += op_problems
    if problems:
        raise PolyaxonfileError(locate_problems(problems, loaded))
    return found
