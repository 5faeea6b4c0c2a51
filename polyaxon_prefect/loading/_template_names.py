"""The names a file's templates use that the run will not define, found before it runs.

Each place a template is rendered gets its own context at run time (`build_context`'s callers):
a param's value and an input's default see the op's params and ``globals``; the run section
(container, init, environment...), ``termination`` and ``cache`` see those and
``connections``; a DAG op's ``conditions`` see ``dag`` and ``ops`` too; a hook's ``conditions``
see the params and ``globals``. A name outside its place's context is ``undefined name`` when
the op runs (often minutes into a DAG): `check` reports every one at once, each at its string.
Places whose context is not decided here (a matrix's values, a Polyaxon ``template``
component) are left to the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jinja2 import TemplateSyntaxError, meta
from jinja2 import nodes as jinja_nodes

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.loading._render import RESERVED_NAMES, template_environment

__all__ = ["undefined_template_names"]

PathT = tuple[str | int, ...]

_PARAMS_SCOPE = frozenset({"params", "globals"})
_RUN_SCOPE = _PARAMS_SCOPE | {"connections"}
_DAG_OP_CONDITIONS_SCOPE = _PARAMS_SCOPE | {"dag", "ops"}
_DAG_ONLY = _DAG_OP_CONDITIONS_SCOPE - _PARAMS_SCOPE
"""What only a DAG op's ``conditions`` see: elsewhere a param reads them (a ref)."""
_REF_HINT = (
    "a param reads it: `ref: dag` with `value: inputs.NAME` (a DAG's input), or `ref: ops.OP` "
    "with `value: outputs.NAME` (an upstream op's output); then use the param's name"
)


def undefined_template_names(
    op: Mapping[str, Any], given: frozenset[str] = frozenset()
) -> list[Problem]:
    """Every template name in the assembled operation ``op`` (components inlined) that its
    place's context will not define, and every template that does not parse, with its path in
    ``op`` (the caller locates it). ``given``: the params the caller gave (``-P``): data, never
    rendered, so never read as templates."""
    return list(_operation(op, (), in_dag=False, given=given))


def _is_template(value: object) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _names_of(op: Mapping[str, Any], component: Mapping[str, Any]) -> frozenset[str]:
    """The op's params as the run names them: the component's inputs and outputs, the op's
    params, a matrix's and a join's params (a trial and a join give their values as params)."""
    names: set[str] = set()
    for section in ("inputs", "outputs"):
        for io in _list(component.get(section)):
            if isinstance(io, Mapping) and isinstance(io.get("name"), str):
                names.add(io["name"])
    names.update(str(key) for key in _dict(op.get("params")))
    names.update(str(key) for key in _dict(_dict(op.get("matrix")).get("params")))
    for join in _list(op.get("joins")):
        names.update(str(key) for key in _dict(_dict(join).get("params")))
    return frozenset(names)


def _operation(
    op: Mapping[str, Any], at: PathT, *, in_dag: bool, given: frozenset[str] = frozenset()
) -> Iterator[Problem]:
    component = _dict(op.get("component"))
    if _dict(component.get("template")).get("enabled"):
        return  # a Polyaxon template component is filled in later: its names are not known
    names = _names_of(op, component)
    params_scope = names | _PARAMS_SCOPE
    run_scope = names | _RUN_SCOPE
    for name, param in _dict(op.get("params")).items():
        if isinstance(param, Mapping) and not param.get("ref") and name not in given:
            yield from _strings(param.get("value"), (*at, "params", name, "value"), params_scope)
    valued = given | set(_dict(op.get("params")))  # an input's default is then not rendered
    for index, io in enumerate(_list(component.get("inputs"))):
        if isinstance(io, Mapping) and not (
            isinstance(io.get("name"), str) and io["name"] in valued
        ):
            path = (*at, "component", "inputs", index, "value")
            yield from _strings(io.get("value"), path, params_scope)
    if in_dag:
        scope = names | _DAG_OP_CONDITIONS_SCOPE
        yield from _strings(op.get("conditions"), (*at, "conditions"), scope)
    for index, hook in enumerate(_list(op.get("hooks"))):
        path = (*at, "hooks", index, "conditions")
        yield from _strings(_dict(hook).get("conditions"), path, params_scope)
    for owner, where in ((op, at), (component, (*at, "component"))):
        for key in ("termination", "cache"):
            yield from _strings(owner.get(key), (*where, key), run_scope)
    run = _dict(component.get("run"))
    run_at = (*at, "component", "run")
    operations = run.get("operations")
    if isinstance(operations, list):  # a DAG: each op is a scope of its own
        for index, child in enumerate(operations):
            if isinstance(child, Mapping):
                yield from _operation(child, (*run_at, "operations", index), in_dag=True)
        return
    for key, value in run.items():
        if key != "kind":
            yield from _strings(value, (*run_at, key), run_scope)


def _strings(value: Any, at: PathT, scope: frozenset[str]) -> Iterator[Problem]:
    if _is_template(value):
        yield from _check(value, at, scope)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*at, key), scope)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*at, index), scope)


def _check(source: str, at: PathT, scope: frozenset[str]) -> Iterator[Problem]:
    environment = template_environment()
    shown = source if len(source) <= 200 else source[:197] + "..."
    try:
        tree = environment.parse(source)
    except TemplateSyntaxError as exc:
        yield Problem(
            f"invalid template syntax in `{shown}`: {exc.message} (template line {exc.lineno})",
            rule="template",
            path=at,
        )
        return
    defined = scope | set(environment.globals)
    for name in sorted(meta.find_undeclared_variables(tree) - defined):
        yield Problem(
            f"undefined name `{name}` in `{shown}`; defined here: {', '.join(sorted(scope))}",
            rule="undefined_template_name",
            path=at,
            hint=_REF_HINT if name in _DAG_ONLY else "declare it as an input or pass it as a param",
        )
    params = scope - RESERVED_NAMES
    for key in sorted(_params_keys(tree) - params - {"as_args"}):
        yield Problem(
            f"undefined name `params.{key}` in `{shown}`; params has: "
            f"{', '.join(sorted(params | {'as_args'}))}",
            rule="undefined_template_name",
            path=at,
            hint="declare it as an input or pass it as a param",
        )


def _params_keys(tree: jinja_nodes.Template) -> set[str]:
    """The keys read as ``params.KEY`` or ``params['KEY']`` (not shadowed by a loop or set)."""
    keys: set[str] = set()
    for node in tree.find_all((jinja_nodes.Getattr, jinja_nodes.Getitem)):
        if isinstance(node, jinja_nodes.Getattr) and _is_params(node.node):
            keys.add(node.attr)
        elif isinstance(node, jinja_nodes.Getitem) and _is_params(node.node):
            arg = node.arg
            if isinstance(arg, jinja_nodes.Const) and isinstance(arg.value, str):
                keys.add(arg.value)
    if any(
        isinstance(assigned, jinja_nodes.Name) and assigned.name == "params"
        for assigned in tree.find_all(jinja_nodes.Name)
        if assigned.ctx == "store"
    ):
        return set()  # the template names something else `params`
    return keys


def _is_params(node: jinja_nodes.Node) -> bool:
    return isinstance(node, jinja_nodes.Name) and node.name == "params"


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
