"""``compile --target kubernetes`` and ``check --backend``: the manifests of every op of a file.

A job or distributed op has its own manifests; a DAG's are those of each of its ops that
becomes a pod (jobs and distributed kinds; a notifier or a nested pipeline stays with the
pipeline), in the DAG's order, each document annotated with its op (`OP_ANNOTATION`) so
``kubectl`` users can tell them apart in one stream. The params the file gives are rendered in,
so ``--lr={{ lr }}`` prints ``--lr=0.01`` and the output applies as is; what only a submission
knows stays as written: ``{{ globals.* }}`` (the run's uuid, paths, times), ``connections``, and
a DAG op's params that an upstream op's outputs fill (`runtime.prepare_cluster`
renders them when a run is submitted).
Problems (a container with no image first among them) are located in the file of the op.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.kubernetes import CLUSTER_KINDS, Backend, build_manifests
from polyaxon_prefect.loading import TemplateError, build_context, render_value
from polyaxon_prefect.runtime._context import new_run_context
from polyaxon_prefect.runtime.cluster._cluster_prepare import ARGV_KEYS, cluster_context
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._param_values import template_params
from polyaxon_prefect.runtime.render._problem_collector import Problems
from polyaxon_prefect.runtime.render._render_sections import (
    has_template,
    render_argv,
    render_text_value,
)
from polyaxon_prefect.specs import LoadedPolyaxonfile, dag_of

__all__ = ["OP_ANNOTATION", "cluster_manifests"]

OP_ANNOTATION = "polyaxon.com/op"
"""The annotation that names the op a manifest belongs to."""


def _annotated(manifests: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    for manifest in manifests:
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[OP_ANNOTATION] = op
    return manifests


def _kept_globals(op_name: str) -> dict[str, str]:
    """Each ``globals`` key rendered as its own template: only a submission knows the run's
    uuid, paths and times, so ``--out={{ globals.run_outputs_path }}/m`` stays as written."""
    keys = cluster_context(new_run_context(op_name)).globals_dict()
    return {key: f"{{{{ globals.{key} }}}}" for key in keys}


def _with_params_rendered(loaded: LoadedPolyaxonfile, op_name: str) -> Any:
    """``loaded`` with its run section's templates rendered with the params the file gives;
    a template that needs what only a submission knows is kept as written."""
    operation = loaded.operation
    component = operation.component
    if component is None or component.run is None:
        return loaded
    kept = _kept_globals(op_name)
    given: frozenset[str] = getattr(loaded, "given_params", frozenset())
    try:
        # the values the file gives (a required input an upstream op fills has none yet)
        values = dict(getattr(loaded, "params", {}) or {})
        typed = template_params(component, operation, values, kept, given)
        context = build_context(typed, globals=kept)
    except (PolyaxonfileError, TemplateError):
        return loaded  # the params' own problems are said when the op is prepared
    run = component.run
    data = run.model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
    data["kind"] = run.kind
    try:
        rendered = type(run).model_validate(_rendered(data, context))
    except ValueError:
        return loaded
    component = component.model_copy(update={"run": rendered})
    return replace(loaded, operation=operation.model_copy(update={"component": component}))


def _rendered(value: object, context: Mapping[str, Any], key: object = None) -> Any:
    """`runtime.prepare_cluster`'s rendering rules (argv one argument per element, env values as
    text, the rest read back as literals), each template on its own: one that cannot render
    yet is kept as written."""
    if key in ARGV_KEYS and isinstance(value, list):
        return [arg for item in value for arg in _argv_item(item, context)]
    if key in ARGV_KEYS and has_template(value):
        problems = Problems()
        argv = render_argv(value, context, (), problems)
        return value if problems.items else argv
    if isinstance(value, dict):
        text_value = "name" in value and "value" in value  # an env var: its value is text
        return {
            k: _text(v, context) if text_value and k == "value" else _rendered(v, context, k)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rendered(item, context) for item in value]
    if isinstance(value, str) and has_template(value):
        try:
            return render_value(value, context)
        except TemplateError:
            return value
    return value


def _argv_item(item: object, context: Mapping[str, Any]) -> list[Any]:
    problems = Problems()
    argv = render_argv([item], context, (), problems)
    return [item] if problems.items else argv


def _text(value: object, context: Mapping[str, Any]) -> Any:
    if not has_template(value):
        return value
    try:
        return render_text_value(value, context)
    except TemplateError:
        return value


def _one(
    loaded: LoadedPolyaxonfile,
    backend: Backend | None,
    options: Mapping[str, Any],
    prefix: tuple[str | int, ...] = (),
) -> tuple[list[dict[str, Any]], list[Problem]]:
    operation = loaded.operation
    component = operation.component
    name = operation.name or (component.name if component is not None else None) or "job"
    try:
        manifests = build_manifests(_with_params_rendered(loaded, name), backend=backend, **options)
    except PolyaxonfileError as exc:
        problems = list(exc.problems)
        if prefix:  # a DAG op: where it sits in the DAG, and which it is
            problems = [
                replace(p.prefixed(prefix), message=f"op `{name}`: {p.message}") for p in problems
            ]
        return [], problems
    return _annotated(manifests, name), []


def cluster_manifests(
    loaded: LoadedPolyaxonfile,
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
