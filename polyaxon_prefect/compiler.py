"""The fully resolved operation as a plain document (what ``polyaxon-prefect compile`` prints),
and the plan of its matrices, so a user sees what a sweep costs before running it."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.specs import Component, LoadedPolyaxonfile, Operation, dag_of

__all__ = ["compile_document", "compile_plan"]


def compile_document(loaded: LoadedPolyaxonfile) -> dict[str, Any]:
    """Presets and runPatch applied, references inlined, params typed by their inputs.

    The document is stable (keys in spec order, no empty fields) so tests and users can diff it;
    it is also what a run records in its directory (`polyaxon_prefect.loading.resolved_document`).
    """
    from polyaxon_prefect.loading import resolved_document

    return resolved_document(loaded)


def _plan(operation: Operation, component: Component | None, depth: int) -> dict[str, Any]:
    from polyaxon_prefect.dag import MAX_DAG_DEPTH, inline_component
    from polyaxon_prefect.search._matrix_plan import matrix_plan

    plan: dict[str, Any] = {}
    if operation.matrix is not None:
        plan = matrix_plan(operation.matrix)
    run = dag_of(component.run) if component is not None else None
    if run is None or not isinstance(run.operations, list):
        return plan
    if depth >= MAX_DAG_DEPTH:
        return plan
    ops: dict[str, Any] = {}
    for op in run.operations:
        inlined = inline_component(op, run)
        child = _plan(op, inlined.component if inlined is not None else None, depth + 1)
        assert op.name is not None  # a Dag refuses an op without a name
        if child:
            ops[op.name] = child
    if ops:
        plan["ops"] = ops
    return plan


def compile_plan(loaded: LoadedPolyaxonfile) -> dict[str, Any] | None:
    """The plan of the operation's matrix and of every matrix among its DAG ops (nested DAGs
    under ``ops``), or None when nothing fans out.

    Each matrix plan is ``search.matrix_plan``'s: the grid/mapping suggestions in order (the
    count and the first few past a thousand), every
    Hyperband bracket and rung with its configs and resource, a count and a note otherwise.
    """
    plan = _plan(loaded.operation, loaded.component, 0)
    return plan or None
