"""A job's params at run time: loaded values merged with overrides, typed, and the values
written as templates rendered.

Checked with the problems of `polyaxon_prefect.specs.params._validate_params`, so a param is
reported with the same rule whether the file, ``-P``, a DAG ref or a sweep suggestion gave it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import (
    ParamValue,
    TemplateError,
    as_str,
    build_context,
    render_value,
)
from polyaxon_prefect.runtime.render._problem_collector import Problems, first
from polyaxon_prefect.runtime.render._render_sections import has_template
from polyaxon_prefect.specs.params._validate_params import (
    missing_param,
    null_param,
    run_value,
    unexpected_param,
)

__all__ = [
    "RunParams",
    "jsonable_params",
    "merge_params",
    "param_values",
    "params_env",
    "render_params",
    "run_params",
    "set_values",
    "template_params",
    "written_values",
]

_DATA_HINT = (
    "a value given with -P, read by a ref or produced by an op is data: `{{ }}` in it is not "
    "rendered"
)


def merge_params(
    component: Any, operation: Any, loaded_params: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """Loaded (typed) values, overridden by ``overrides`` parsed by each input's type."""
    values = dict(loaded_params)
    problems = Problems()
    op_params = operation.params or {}
    for name, value in overrides.items():
        io = component.get_io(name)
        if io is None:
            if name in op_params and op_params[name].is_context_only:
                values[name] = value
                continue
            declared = ", ".join(f"`{io.name}`" for io in component.ios) or "none"
            problems.items.append(unexpected_param(name, declared))
            continue
        typed, found = run_value(name, io, value, ("params", name))
        if found:
            problems.items.extend(found)
        else:
            values[name] = typed
    for io in component.inputs or []:
        if values.get(io.name) is None and io.is_optional is not True:
            problem = (
                null_param(io.name, ("params", io.name)) if io.name in values else missing_param(io)
            )
            problems.items.append(problem)
    if problems.items:
        raise PolyaxonfileError(problems.items)
    return values


def param_values(
    component: Any, operation: Any, values: Mapping[str, Any]
) -> dict[str, ParamValue]:
    op_params = operation.params or {}
    out: dict[str, ParamValue] = {}
    outputs = {io.name for io in component.outputs or []}
    for io in component.ios:
        if io.name not in values or (io.name in outputs and values[io.name] is None):
            continue
        param = op_params.get(io.name)
        out[io.name] = ParamValue(
            value=values[io.name],
            type=io.type,
            is_flag=io.is_flag is True,
            arg_format=io.arg_format,
            connection=first(getattr(param, "connection", None), io.connection),
        )
    for name, value in values.items():
        if name not in out and component.get_io(name) is None:
            out[name] = ParamValue(
                value=value, connection=getattr(op_params.get(name), "connection", None)
            )
    return out


def written_values(component: Any, operation: Any, given: frozenset[str]) -> dict[str, Any]:
    """The param values the Polyaxonfile writes, by name: a literal param's value or an
    input's default (``{{ globals.run_outputs_path }}/model``).

    Only these are rendered, where they hold a template (`render_params`). A value given by
    the caller (``-P``), read by a ref, produced by an upstream op or suggested by a sweep is
    data: ``{{`` in it arrives as written.
    """
    op_params = operation.params or {}
    written: dict[str, Any] = {}
    for io in component.ios:
        param = op_params.get(io.name)
        if param is None:
            written[io.name] = io.value
        elif not (param.is_ref or io.name in given):
            written[io.name] = param.value
    for name, param in op_params.items():
        if name in written or component.get_io(name) is not None or name in given:
            continue
        if not param.is_ref:
            written[name] = param.value
    return written


def render_params(
    component: Any,
    params: dict[str, ParamValue],
    values: dict[str, Any],
    globals_: dict[str, Any],
    written: Mapping[str, Any],
) -> None:
    """Each param value that holds ``{{``, decided once: rendered (into ``params`` and
    ``values``) when it is still the value written in the file (`written_values`; an
    override replaces it with data), else typed as the data it is (typing skipped it as
    "rendered later", and a ``{{ 7*7 }}`` given for an ``int`` input is no integer). Every
    problem of both is raised at once."""
    problems = Problems()
    context: dict[str, Any] | None = None  # made at the first template, from the values as given
    for name, param in list(params.items()):
        if not has_template(param.value):
            continue
        if name in written and param.value == written[name]:
            if context is None:
                context = build_context(params, globals=globals_)
            try:
                rendered = render_value(param.value, context)
            except TemplateError as exc:
                problems.template(exc, ("params", name, "value"))
                continue
            values[name] = rendered
            params[name] = ParamValue(
                rendered, param.type, param.is_flag, param.arg_format, param.connection
            )
            continue
        io = component.get_io(name)
        if io is not None and io.type:
            _, found = run_value(
                name, io, param.value, ("params", name), data=True, hint=_DATA_HINT
            )
            problems.items.extend(found)
    if problems.items:
        raise PolyaxonfileError(problems.items)


def template_params(
    component: object,
    operation: object,
    values: dict[str, Any],
    globals_: dict[str, Any],
    given: frozenset[str],
) -> dict[str, ParamValue]:
    """The params as template values, the ones written as templates rendered (into ``values``
    too) and the data values typed; raises `PolyaxonfileError` with every problem."""
    params = param_values(component, operation, values)
    render_params(component, params, values, globals_, written_values(component, operation, given))
    return params


def params_env(component: Any, operation: Any, values: Mapping[str, Any]) -> dict[str, str]:
    """The env vars of the params with ``toEnv`` (the op's setting first, then the input's)."""
    env: dict[str, str] = {}
    op_params = operation.params or {}
    for name, value in values.items():
        io = component.get_io(name)
        to_env = first(getattr(op_params.get(name), "to_env", None), getattr(io, "to_env", None))
        if to_env and value is not None:
            env[to_env] = as_str(value.to_dict() if hasattr(value, "to_dict") else value)
    return env


def set_values(component: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every input and context value, and the outputs that have a value (as Polyaxon passes)."""
    outputs = {io.name for io in component.outputs or []}
    return {k: v for k, v in values.items() if k not in outputs or v is not None}


def jsonable_params(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in values.items()}


@dataclass(frozen=True)
class RunParams:
    """An op's params, read once for the whole render pass, in every form its sections use."""

    values: dict[str, Any]
    """Loaded values under the overrides, the ones written as templates rendered."""
    typed: dict[str, ParamValue]
    """As the templates see them (type, ``isFlag``, ``argFormat``, connection)."""
    passed: dict[str, Any]
    """What the job is passed (`set_values`), as JSON values: its env contract, its record."""
    env: dict[str, str]
    """The variables of the params with ``toEnv``."""


def run_params(
    component: Any,
    operation: Any,
    loaded_params: Mapping[str, Any],
    overrides: Mapping[str, Any],
    globals_: dict[str, Any],
    given: frozenset[str],
) -> RunParams:
    """Merge, type and render an op's params once (`merge_params`, `template_params`).

    Raises:
        PolyaxonfileError: every bad, missing or unrenderable param.
    """
    values = merge_params(component, operation, loaded_params, overrides)
    typed = template_params(component, operation, values, globals_, given)
    passed = jsonable_params(set_values(component, values))
    return RunParams(values, typed, passed, params_env(component, operation, values))
