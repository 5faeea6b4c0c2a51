"""DAG validation: every graph and typing error of a pipeline, reported at once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from polyaxon_prefect._source import suggest
from polyaxon_prefect.dag._graph import find_cycle, op_upstreams
from polyaxon_prefect.exceptions import Problem

__all__ = ["GLOBALS_CONTEXTS", "dag_context", "validate_dag"]

# What `ref: ops.X, value: globals.Y` may name (Polyaxon's GLOBALS_CONTEXTS, plus the two paths
# its resolver can serve but its validator forgot).
GLOBALS_CONTEXTS = (
    "owner_name",
    "project_name",
    "project_unique_name",
    "project_uuid",
    "run_info",
    "name",
    "uuid",
    "status",
    "namespace",
    "iteration",
    "context_path",
    "artifacts_path",
    "run_artifacts_path",
    "run_outputs_path",
    "created_at",
    "compiled_at",
    "schedule_at",
    "started_at",
    "finished_at",
    "duration",
    "cloning_kind",
    "original_uuid",
    "is_independent",
)


def _io_entries(ios: Iterable[Any] | None) -> list[Any]:
    return list(ios or ())


def _io_type(io: Any) -> str | None:
    return io.full_type


def dag_context(dag_component: Any, components: dict[str, Any]) -> dict[str, str | None]:
    """Searchable ref keys (``ops.a.outputs.loss``, ``dag.inputs.x``) mapped to their types.

    ``components`` maps op name -> its resolved `Component` (ops whose component could not be
    resolved are absent: refs to them are still accepted, their errors were already reported).
    """
    context: dict[str, str | None] = {
        "dag.inputs": None,
        "dag.globals": None,
        "dag.artifacts": None,
    }
    for io in _io_entries(dag_component.inputs):
        context[f"dag.inputs.{io.name}"] = _io_type(io)
    for key in GLOBALS_CONTEXTS:
        context[f"dag.globals.{key}"] = "str"
    for name, component in components.items():
        prefix = f"ops.{name}"
        for whole in ("inputs", "outputs", "globals", "artifacts", "io"):
            context[f"{prefix}.{whole}"] = None
        for io in _io_entries(component.inputs):
            context[f"{prefix}.inputs.{io.name}"] = _io_type(io)
            if io.type == "artifacts":
                context[f"{prefix}.artifacts.{io.name}"] = "artifacts"
        for io in _io_entries(component.outputs):
            context[f"{prefix}.outputs.{io.name}"] = _io_type(io)
            if io.type == "artifacts":
                context[f"{prefix}.artifacts.{io.name}"] = "artifacts"
        for key in GLOBALS_CONTEXTS:
            context[f"{prefix}.globals.{key}"] = "str"
    return context


def validate_dag(dag_component: Any, *, validate_params: Any) -> list[Problem]:
    """All problems of the DAG in ``dag_component`` (a `Component` whose run is a `Dag`).

    Paths are relative to the component (``run.operations[2].params.lr``). ``validate_params`` is
    the param checker (injected to keep this module free of spec imports at import time).
    """
    dag = dag_component.run
    problems: list[Problem] = []
    operations = dag.operations if isinstance(dag.operations, list) else []
    names: dict[str, int] = {}
    for index, op in enumerate(operations):
        base = ("run", "operations", index)
        if not op.name:
            problems.append(
                Problem(
                    "every operation of a DAG needs a `name`",
                    rule="dag_op_name",
                    path=base,
                    hint="add `name: <unique-name>` to this operation",
                )
            )
            continue
        if op.name in names:
            problems.append(
                Problem(
                    f"duplicate operation name `{op.name}` (also used by operations"
                    f"[{names[op.name]}])",
                    rule="dag_duplicate_op",
                    path=(*base, "name"),
                    value=op.name,
                    hint="operation names must be unique inside a DAG",
                )
            )
        else:
            names[op.name] = index

    component_names = {
        c.name: c for c in (dag.components if isinstance(dag.components, list) else []) if c.name
    }
    graph: dict[str, list[str]] = {}
    for index, op in enumerate(operations):
        if not op.name or names.get(op.name) != index:
            continue
        ups = op_upstreams(op)
        graph[op.name] = list(ups)
        for upstream, reason in ups.items():
            if upstream not in names:
                close = suggest(upstream, list(names))
                problems.append(
                    Problem(
                        f"operation `{op.name}` depends on `{upstream}`, which is not an "
                        "operation of this DAG",
                        rule="dag_unknown_upstream",
                        path=("run", "operations", index, *_reason_path(reason)),
                        value=upstream,
                        hint=f"did you mean `{close}`?"
                        if close
                        else "known operations: " + ", ".join(names),
                    )
                )
            elif upstream == op.name:
                problems.append(
                    Problem(
                        f"operation `{op.name}` depends on itself",
                        rule="dag_cycle",
                        path=("run", "operations", index, *_reason_path(reason)),
                        value=upstream,
                    )
                )
        if op.dag_ref is not None and op.component is None and op.dag_ref not in component_names:
            close = suggest(op.dag_ref, list(component_names))
            problems.append(
                Problem(
                    f"operation `{op.name}` uses dagRef `{op.dag_ref}`, but this DAG defines no "
                    "component with that name",
                    rule="dag_unknown_component",
                    path=("run", "operations", index, "dagRef"),
                    value=op.dag_ref,
                    hint=f"did you mean `{close}`?"
                    if close
                    else "define it under `run.components` with that `name`",
                )
            )

    cycle = find_cycle({k: [u for u in v if u != k] for k, v in graph.items()})
    if cycle:
        problems.append(
            Problem(
                "the DAG is not acyclic: " + " -> ".join(cycle),
                rule="dag_cycle",
                path=("run", "operations", names[cycle[0]], "name"),
                value=cycle,
                hint="remove one of these dependencies (or refs) to break the cycle",
            )
        )

    resolved: dict[str, Any] = {}
    for index, op in enumerate(operations):
        if not op.name or names.get(op.name) != index:
            continue
        component = op.component
        if component is None and op.dag_ref in component_names:
            component = component_names[op.dag_ref]
        if component is not None:
            resolved[op.name] = component
    context = dag_context(dag_component, resolved)
    for index, op in enumerate(operations):
        component = resolved.get(op.name) if op.name and names.get(op.name) == index else None
        if component is None:
            continue
        base = ("run", "operations", index)
        for problem in validate_params(
            component,
            op.params,
            matrix=op.matrix,
            joins=op.joins,
            is_template=False,
            dag_context=context,
        ):
            problems.append(problem.prefixed(base))
        if getattr(component.run, "kind", None) == "dag":
            for problem in validate_dag(component, validate_params=validate_params):
                problems.append(problem.prefixed((*base, "component")))
    return problems


def _reason_path(reason: str) -> tuple[str | int, ...]:
    """``"events[0]"`` -> ``("events", 0)``; ``"params.lr"`` -> ``("params", "lr")``."""
    head, _, rest = reason.partition(".")
    if "[" in head:
        name, _, index = head.partition("[")
        return (name, int(index.rstrip("]")))
    return (head, rest) if rest else (head,)
