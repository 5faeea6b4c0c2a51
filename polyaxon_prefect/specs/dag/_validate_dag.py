"""DAG validation: every graph and typing error of a pipeline, reported at once.

Pure spec checking (names, upstreams, ``dagRef``, cycles, the params of every op against its
component), so it lives with the specs: loading a file runs it, and the DAG planner runs it
again without the param checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from polyaxon_prefect._source import suggest
from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs._polyaxonfile import Component, Dag, Operation
from polyaxon_prefect.specs.dag._dag_graph import find_cycle, op_upstreams
from polyaxon_prefect.specs.matrix._matrix import Matrix
from polyaxon_prefect.specs.params._io import IO
from polyaxon_prefect.specs.params._param_spec import Param
from polyaxon_prefect.specs.sections._joins import Join

__all__ = ["GLOBALS_CONTEXTS", "ParamValidator", "dag_context", "validate_dag"]

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

PathT = tuple[str | int, ...]


class ParamValidator(Protocol):
    """The signature of `validate_params`, which `validate_dag` calls for every op."""

    def __call__(
        self,
        component: Component,
        params: Mapping[str, Param] | None,
        *,
        matrix: Matrix | None = ...,
        joins: list[Join] | str | None = ...,
        is_template: bool = ...,
        dag_context: Mapping[str, str | None] | None = ...,
    ) -> Iterable[Problem]: ...


def _io_entries(ios: Iterable[IO] | None) -> list[IO]:
    return list(ios or ())


def dag_context(
    dag_component: Component, components: Mapping[str, Component]
) -> dict[str, str | None]:
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
        context[f"dag.inputs.{io.name}"] = io.full_type
    for key in GLOBALS_CONTEXTS:
        context[f"dag.globals.{key}"] = "str"
    for name, component in components.items():
        prefix = f"ops.{name}"
        for whole in ("inputs", "outputs", "globals", "artifacts", "io"):
            context[f"{prefix}.{whole}"] = None
        for io in _io_entries(component.inputs):
            context[f"{prefix}.inputs.{io.name}"] = io.full_type
            if io.type == "artifacts":
                context[f"{prefix}.artifacts.{io.name}"] = "artifacts"
        for io in _io_entries(component.outputs):
            context[f"{prefix}.outputs.{io.name}"] = io.full_type
            if io.type == "artifacts":
                context[f"{prefix}.artifacts.{io.name}"] = "artifacts"
        for key in GLOBALS_CONTEXTS:
            context[f"{prefix}.globals.{key}"] = "str"
    return context


def validate_dag(dag_component: Component, *, validate_params: ParamValidator) -> list[Problem]:
    """All problems of the DAG in ``dag_component`` (a `Component` whose run is a `Dag`).

    Paths are relative to the component (``run.operations[2].params.lr``). ``validate_params`` is
    the param checker (`polyaxon_prefect.specs.validate_params`, or one that checks nothing when
    the params were checked already).
    """
    dag = dag_component.run
    if not isinstance(dag, Dag):
        return []
    operations = dag.operation_list
    problems: list[Problem] = []
    names = _op_names(operations, problems)
    component_names = {
        c.name: c for c in (dag.components if isinstance(dag.components, list) else []) if c.name
    }
    graph: dict[str, list[str]] = {}
    for index, name, op in _unique_ops(operations, names):
        graph[name] = _check_upstreams(op, index, names, problems)
        _check_dag_ref(op, index, component_names, problems)
    _check_acyclic(graph, names, problems)
    resolved = {
        name: component
        for _, name, op in _unique_ops(operations, names)
        if (component := _op_component(op, component_names)) is not None
    }
    context = dag_context(dag_component, resolved)
    for index, name, op in _unique_ops(operations, names):
        component = resolved.get(name)
        if component is not None:
            problems += _check_op_params(op, component, index, context, validate_params)
    return problems


def _op_names(operations: Sequence[Operation], problems: list[Problem]) -> dict[str, int]:
    """The index of each op by name; nameless and duplicate ops are reported."""
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
    return names


def _unique_ops(
    operations: Sequence[Operation], names: Mapping[str, int]
) -> list[tuple[int, str, Operation]]:
    """``(index, name, op)`` of the ops with a name of their own (the first of duplicates)."""
    return [
        (index, op.name, op)
        for index, op in enumerate(operations)
        if op.name and names.get(op.name) == index
    ]


def _check_upstreams(
    op: Operation, index: int, names: Mapping[str, int], problems: list[Problem]
) -> list[str]:
    """The op's upstreams; unknown ones and the op itself are reported."""
    ups = op_upstreams(op)
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
    return list(ups)


def _check_dag_ref(
    op: Operation, index: int, components: Mapping[str, Component], problems: list[Problem]
) -> None:
    if op.dag_ref is None or op.component is not None or op.dag_ref in components:
        return
    close = suggest(op.dag_ref, list(components))
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


def _check_acyclic(
    graph: Mapping[str, list[str]], names: Mapping[str, int], problems: list[Problem]
) -> None:
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


def _op_component(op: Operation, components: Mapping[str, Component]) -> Component | None:
    """The op's inline component, else the DAG's component its ``dagRef`` names."""
    if op.component is not None:
        return op.component
    return components.get(op.dag_ref) if op.dag_ref is not None else None


def _check_op_params(
    op: Operation,
    component: Component,
    index: int,
    context: Mapping[str, str | None],
    validate_params: ParamValidator,
) -> list[Problem]:
    """The op's params against its component, then the component's own DAG, if it is one."""
    base: PathT = ("run", "operations", index)
    problems = [
        problem.prefixed(base)
        for problem in validate_params(
            component,
            op.params,
            matrix=op.matrix,
            joins=op.joins,
            is_template=False,
            dag_context=context,
        )
    ]
    if isinstance(component.run, Dag):
        for problem in validate_dag(component, validate_params=validate_params):
            problems.append(problem.prefixed((*base, "component")))
    return problems


def _reason_path(reason: str) -> PathT:
    """``"events[0]"`` -> ``("events", 0)``; ``"params.lr"`` -> ``("params", "lr")``."""
    head, _, rest = reason.partition(".")
    if "[" in head:
        name, _, index = head.partition("[")
        return (name, int(index.rstrip("]")))
    return (head, rest) if rest else (head,)
