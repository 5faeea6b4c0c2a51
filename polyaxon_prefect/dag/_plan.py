"""From a validated DAG component to what the scheduler runs: ops, edges, order, limits.

`plan_dag` does everything that can be decided before the first op starts, so a cycle, an unknown
upstream or a missing ``dagRef`` component fails the DAG before anything runs (Polyaxon only finds
some of these once ops are scheduled). Each planned op is self-contained: its component is inlined
and the DAG's ``environment``, ``termination`` and ``cache`` are pushed down into it, so a child
can be run by the ordinary single-op runtime (`child_loaded`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import DagError, PolyaxonfileError, Problem
from polyaxon_prefect.loading import apply_run_patch, patch
from polyaxon_prefect.specs import (
    DISTRIBUTED_RUNTIMES,
    BaseSpec,
    Cache,
    Component,
    Dag,
    EarlyStopping,
    Environment,
    LoadedPolyaxonfile,
    Operation,
    Termination,
    dag_of,
    is_template,
    op_upstreams,
    topological_stages,
    typed_params,
    validate_dag,
)

__all__ = ["MAX_DAG_DEPTH", "DagPlan", "child_loaded", "inline_component", "plan_dag", "push_down"]

MAX_DAG_DEPTH = 32
"""How deep DAGs nested in DAGs are followed when a whole tree is walked at once (``compile``'s
matrix plans); a DAG that is run is planned one level at a time and needs no limit."""


@dataclass(frozen=True)
class DagPlan:
    """A DAG ready to schedule.

    ``ops`` maps each op name to its `Operation` with the component inlined and the DAG-level
    defaults pushed down; ``upstreams``/``downstreams`` are the edges (``dependencies``, ``ref:
    ops.X`` params and ``events`` refs); ``order`` is a topological order that is the same on
    every run (declaration order within a stage).
    """

    ops: dict[str, Operation]
    upstreams: dict[str, tuple[str, ...]]
    downstreams: dict[str, tuple[str, ...]]
    order: tuple[str, ...]
    concurrency: int | None
    early_stopping: tuple[EarlyStopping, ...]


def _no_param_checks(*_args: object, **_kwargs: object) -> list[Problem]:
    """Params were checked when the file was loaded; the plan only needs the graph checks."""
    return []


def _merge_spec(parent: Any, child: Any) -> Any:
    """``child`` with the fields it leaves unset taken from ``parent`` (deep, child wins).

    This is Polyaxon's ``pre_merge`` of DAG defaults into children. A ``{{ }}`` template on
    either side cannot be merged field by field: the child's value (template or not) wins whole.
    """
    if parent is None:
        return child
    if child is None:
        return parent
    if isinstance(child, str) or isinstance(parent, str):
        return child
    merged = patch(
        child.model_dump(by_alias=True, exclude_none=True),
        parent.model_dump(by_alias=True, exclude_none=True),
        "pre_merge",
    )
    return type(child).model_validate(merged)


def _run_with_environment(run: BaseSpec, environment: Environment) -> BaseSpec:
    """``run`` with ``environment`` merged under its own (every replica for distributed kinds)."""
    if "environment" in type(run).model_fields:
        return run.model_copy(
            update={"environment": _merge_spec(environment, getattr(run, "environment", None))}
        )
    if not isinstance(run, DISTRIBUTED_RUNTIMES):
        return run
    update: dict[str, Any] = {}
    for name in run.REPLICAS:
        value = getattr(run, name)
        if isinstance(value, Mapping):  # raycluster ``workers``: group name -> replica
            update[name] = {k: _run_with_environment(v, environment) for k, v in value.items()}
        elif isinstance(value, BaseSpec):
            update[name] = _run_with_environment(value, environment)
    return run.model_copy(update=update) if update else run


def push_down(
    op: Operation,
    *,
    environment: Environment | None = None,
    termination: Termination | str | None = None,
    cache: Cache | str | None = None,
) -> Operation:
    """``op`` with DAG-level defaults applied where the op and its component set nothing.

    ``termination`` and ``cache`` are merged field by field under the op's effective value (the
    op's own, else its component's), so ``maxRetries`` from the DAG and ``timeout`` from the
    child both apply. ``environment`` goes into the component's run (Polyaxon pushes it as
    ``runPatch.environment``); for a nested DAG it lands on that DAG's ``environment`` and is
    pushed further when that DAG is planned.
    """
    component = op.component
    update: dict[str, Any] = {}
    if termination is not None:
        own_termination = op.termination
        if own_termination is None and component is not None:
            own_termination = component.termination
        update["termination"] = _merge_spec(termination, own_termination)
    if cache is not None:
        own_cache = op.cache
        if own_cache is None and component is not None:
            own_cache = component.cache
        update["cache"] = _merge_spec(cache, own_cache)
    if environment is not None and component is not None and not isinstance(environment, str):
        run = _run_with_environment(component.run, environment)
        if run is not component.run:
            update["component"] = component.model_copy(update={"run": run})
    return op.model_copy(update=update) if update else op


def inline_component(op: Operation, dag: Dag) -> Operation | None:
    """``op`` with its ``dagRef`` component (from ``dag.components``) inlined; None if missing."""
    if op.component is not None:
        return op
    if op.dag_ref is None:
        return None
    component = dag.get_component(op.dag_ref)
    if component is None:
        return None
    return op.model_copy(update={"component": component})


def _split(source: Operation | Component) -> tuple[Operation | None, Component]:
    """(operation or None, component) for a DAG given as an Operation or a Component."""
    if not isinstance(source, Operation):
        return None, source
    if source.component is None:
        raise DagError(
            [
                Problem(
                    "this operation has no component (its reference was not resolved)",
                    rule="dag_no_component",
                    path=("component",),
                    hint="load the file with load_polyaxonfile, which resolves references",
                )
            ]
        )
    return source, source.component


def _render_setting(value: object, name: str, params: Mapping[str, Any] | None) -> Any:
    """A DAG setting written as ``{{ }}``, rendered with the DAG's params."""
    from polyaxon_prefect.loading import (
        ParamValue,
        TemplateError,
        build_context,
        render_value,
    )

    if params is None:
        raise DagError(
            [
                Problem(
                    f"`{name}` of the dag is a template ({value!r}) and no params were given "
                    "to render it",
                    rule="dag_template",
                    path=("run", name),
                    hint="pass the DAG's params to plan_dag, or write a literal value",
                )
            ]
        )
    context = build_context({k: ParamValue(value=v) for k, v in params.items()})
    try:
        return render_value(value, context)
    except TemplateError as exc:
        raise DagError([exc.problem(("run", name))]) from None


def _concurrency(value: object, params: Mapping[str, Any] | None) -> int | None:
    if value is None:
        return None
    if is_template(value):
        value = _render_setting(value, "concurrency", params)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DagError(
            [
                Problem(
                    f"`concurrency` of the dag must be a positive integer, got {value!r}",
                    rule="dag_concurrency",
                    path=("run", "concurrency"),
                    value=value,
                )
            ]
        )
    return value


def _early_stopping(value: Any, params: Mapping[str, Any] | None) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        from pydantic import TypeAdapter, ValidationError

        rendered = _render_setting(value, "earlyStopping", params)
        try:
            value = TypeAdapter(list[EarlyStopping]).validate_python(rendered)
        except ValidationError as exc:
            raise DagError(
                [
                    Problem(
                        f"`earlyStopping` of the dag rendered to an invalid list: {exc}",
                        rule="dag_early_stopping",
                        path=("run", "earlyStopping"),
                    )
                ]
            ) from None
    return tuple(value)


def plan_dag(source: Operation | Component, *, params: Mapping[str, Any] | None = None) -> DagPlan:
    """Plan the DAG of ``source``: a `Component` whose run is a `Dag`, or an `Operation` with
    such a component inlined (the operation's ``termination``/``cache`` then override the
    component's as the DAG-level defaults pushed to every op).

    ``params`` (the DAG's typed inputs) are only needed when ``concurrency`` or
    ``earlyStopping`` is a ``{{ }}`` template.

    Raises:
        DagError: a cycle, an unknown upstream, a duplicate op name, a ``dagRef`` to a missing
            component or an op without a component, all reported at once; paths are relative
            to the component (``run.operations[2].dependencies[0]``).
    """
    operation, component = _split(source)
    dag = dag_of(component.run)
    if dag is None:
        raise DagError(
            [Problem("this component does not run a dag", rule="dag_kind", path=("run", "kind"))]
        )
    if isinstance(dag.operations, str):
        raise DagError(
            [
                Problem(
                    "`operations` of the dag is a template; it must be a list to be run",
                    rule="dag_template",
                    path=("run", "operations"),
                )
            ]
        )
    problems = list(validate_dag(component, validate_params=_no_param_checks))
    ops: dict[str, Operation] = {}
    for index, op in enumerate(dag.operation_list):
        if op.name in ops or not op.name:
            continue  # duplicates and nameless ops were reported by validate_dag
        inlined = inline_component(op, dag)
        if inlined is None:
            if op.dag_ref is None:
                problems.append(
                    Problem(
                        f"operation `{op.name}` has no component (its hubRef/urlRef/pathRef was "
                        "not resolved)",
                        rule="dag_no_component",
                        path=("run", "operations", index),
                        hint="load the file with load_polyaxonfile, which resolves references",
                    )
                )
            continue  # a missing dagRef component was reported by validate_dag
        ops[op.name] = inlined
    if problems:
        raise DagError(problems)

    environment = dag.environment
    termination = component.termination
    cache = component.cache
    if operation is not None:
        termination = operation.termination if operation.termination is not None else termination
        cache = operation.cache if operation.cache is not None else cache
    ops = {
        name: push_down(op, environment=environment, termination=termination, cache=cache)
        for name, op in ops.items()
    }
    upstreams = {name: tuple(op_upstreams(op)) for name, op in ops.items()}
    downstreams: dict[str, list[str]] = {name: [] for name in ops}
    for name, ups in upstreams.items():
        for upstream in ups:
            downstreams[upstream].append(name)
    order = tuple(name for stage in topological_stages(upstreams) for name in stage)
    return DagPlan(
        ops=ops,
        upstreams=upstreams,
        downstreams={name: tuple(d) for name, d in downstreams.items()},
        order=order,
        concurrency=_concurrency(dag.concurrency, params),
        early_stopping=_early_stopping(dag.early_stopping, params),
    )


def child_loaded(parent: LoadedPolyaxonfile, op: Operation) -> LoadedPolyaxonfile:
    """A standalone `LoadedPolyaxonfile` for the DAG op ``op``, as if it had been loaded alone.

    ``operation`` is the op with its component inlined (a ``dagRef`` is looked up in the
    parent's DAG when the op is not already planned); ``params`` are its literal (non-ref)
    params and input defaults, typed by the receiving inputs; ref params are resolved later by
    `resolve_params` once the upstreams have finished.

    Raises:
        DagError: the op has no component and its ``dagRef`` names none of the parent's.
        PolyaxonfileError: a literal param does not fit its input.
    """
    component = op.component
    if component is None:
        dag = dag_of(parent.component.run) if parent.component is not None else None
        inlined = inline_component(op, dag) if dag is not None else None
        if inlined is None or inlined.component is None:
            raise DagError(
                [
                    Problem(
                        f"operation `{op.name}` has no component and its dagRef "
                        f"`{op.dag_ref}` is not a component of the parent dag",
                        rule="dag_unknown_component",
                        path=("dagRef",),
                        value=op.dag_ref,
                    )
                ]
            )
        op, component = inlined, inlined.component
    if op.run_patch and component.run is not None and not isinstance(component.run, str):
        # the loader patches the file's own op; a DAG op's `runPatch` is applied here
        run = apply_run_patch(
            component.run.model_dump(by_alias=True, exclude_none=True),
            op.run_patch,
            op.patch_strategy or "post_merge",
        )
        component = component.model_copy(update={"run": type(component.run).model_validate(run)})
        op = op.model_copy(update={"component": component, "run_patch": None})
    try:
        params = typed_params(component, op.params)
    except ValueError as exc:
        raise PolyaxonfileError(
            [Problem(f"operation `{op.name}`: {exc}", rule="param_type", path=("params",))]
        ) from None
    return LoadedPolyaxonfile(
        operation=op,
        params=params,
        files=parent.files,
        legacy_notes=parent.legacy_notes,
    )
