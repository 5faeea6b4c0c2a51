"""Params checked against a component's inputs and outputs (spec 3.3).

Returns every problem at once (not just the first) as :class:`Problem`s whose ``path`` is
relative to the operation (``("params", "lr", "value")``), so the caller can point at the YAML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polyaxon_prefect._source import suggest
from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs._polyaxonfile import Component
from polyaxon_prefect.specs.matrix._matrix import Hyperband, Matrix
from polyaxon_prefect.specs.matrix._matrix import Mapping as MappingMatrix
from polyaxon_prefect.specs.params._io import IO, check_validation, contains_template
from polyaxon_prefect.specs.params._param_spec import Param
from polyaxon_prefect.specs.params._types import (
    are_compatible,
    is_list_type,
    list_item_type,
    parse_value,
)
from polyaxon_prefect.specs.sections._joins import Join, JoinParam


def unexpected_param(name: str, declared: str) -> Problem:
    """The one problem for a param that matches no input or output, at load time (a file's
    ``params``, ``-P``) and at run time (a DAG ref or a sweep suggestion). ``declared`` lists
    the names in backquotes; the closest one is suggested first (``-P loss=...`` for an
    input ``max_loss``: did you mean `max_loss`?)."""
    close = suggest(name, re.findall(r"`([^`]+)`", declared))
    return _problem(
        f"received unexpected param `{name}`: the component has no input or output with that name",
        "param_unexpected",
        ("params", name),
        hint=(f"did you mean `{close}`? " if close else "")
        + f"declared inputs/outputs: {declared}; "
        "use `contextOnly: true` for a value only meant for templates",
    )


def missing_param(io: IO, *, is_output: bool = False) -> Problem:
    """A required input (or output whose validation is not delayed) that no param sets."""
    what = "Output" if is_output else "Input"
    return _problem(
        f"{what} `{io.name}` is required"
        + (" (its validation is not delayed)" if is_output else "")
        + ", no param was passed",
        "param_missing",
        ("params",),
        hint=_missing_hint(io.name),
    )


def null_param(name: str, path: Path) -> Problem:
    """A param whose value is null for an input that is not optional; ``path`` is the param's."""
    return _problem(
        f"param `{name}` is null but the input `{name}` is not optional",
        "param_required",
        (*path, "value"),
        hint="give a value, or make the input optional",
    )


def invalid_param(name: str, error: str, path: Path, hint: str | None = None) -> Problem:
    """A typed value that breaks its input's ``validation``; ``path`` is the param's."""
    return _problem(f"param `{name}`: {error}", "param_validation", (*path, "value"), hint=hint)


def to_init_problem(name: str, io: IO, connection: str | None, path: Path) -> Problem | None:
    """Why ``io`` cannot be turned into an init container (spec 3.2), or None when it can: it
    needs a git, dockerfile, artifacts or path type, or a ``connection``."""
    if not io.type:
        message = f"param `{name}` cannot be turned into an init container without a type"
        hint = f"give the input `{name}` a type (git, dockerfile, artifacts or path)"
    elif io.type not in _INIT_TYPES and not connection:
        message = (
            f"param `{name}` of type `{io.type}` cannot be turned into an init container "
            "automatically"
        )
        hint = "use a git, dockerfile, artifacts or path input, or set a `connection`"
    else:
        return None
    return _problem(message, "param_to_init", (*path, "toInit"), hint=hint)


def run_value(
    name: str, io: IO, value: object, path: Path, *, data: bool = False, hint: str | None = None
) -> tuple[Any, list[Problem]]:
    """A value given to ``io`` at run time (``-P``, a DAG ref, a sweep suggestion), typed, and
    its problems, with the rules of the load-time check.

    ``data``: a value holding ``{{`` is typed as it is (it will not be rendered), instead of
    being left for rendering. ``hint`` is put on the type and validation problems.
    """
    if value is None:
        return None, ([] if io.is_optional is True else [null_param(name, path)])
    if contains_template(value) and not data:
        return value, []
    try:
        parsed = parse_value(io.type, value, is_list=io.is_list is True) if io.type else value
    except ValueError as exc:
        return value, [_problem(f"param `{name}`: {exc}", "param_type", (*path, "value"), hint)]
    errors = check_validation(io.effective_validation, parsed)
    return parsed, [invalid_param(name, error, path, hint) for error in errors]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = [
    "invalid_param",
    "missing_param",
    "null_param",
    "run_value",
    "to_init_problem",
    "typed_params",
    "unexpected_param",
    "validate_params",
]

Path = tuple[str | int, ...]


def _problem(message: str, rule: str, path: Path, hint: str | None = None) -> Problem:
    return Problem(message=message, rule=rule, path=path, hint=hint)


def _missing_hint(name: str) -> str:
    return (
        f"pass it with `-P {name}=...` on the command line, or `params: {{{name}: ...}}` "
        "in the operation, or give the input a default `value`"
    )


def _join_params(joins: list[Join] | str | None) -> dict[str, tuple[int, JoinParam]]:
    """Join params by name, with the index of the join that declares them."""
    found: dict[str, tuple[int, JoinParam]] = {}
    for index, join in enumerate(joins if isinstance(joins, list) else []):
        params = join.params
        if not isinstance(params, Mapping):
            continue
        for name, param in params.items():
            found.setdefault(name, (index, param))
    return found


def _matrix_provides(matrix: Matrix | None, io: IO, problems: list[Problem]) -> bool:
    """Whether the matrix sets ``io`` in every trial; records a problem for a bad hp kind."""
    match matrix:
        case None:
            return False
        case MappingMatrix(values=list() as values):
            if not values or not isinstance(values[0], Mapping) or io.name not in values[0]:
                return False
            _check_mapping_values(io, values, problems)
            return True
        case MappingMatrix():  # `values` is a `{{ }}` list: unknown until rendered
            return True
    params = matrix.hp_params()
    if io.name in params:
        error = params[io.name].validate_io(io.type)
        if error:
            problems.append(_problem(error, "matrix_param_type", ("matrix", "params", io.name)))
        return True
    return isinstance(matrix, Hyperband) and matrix.resource.name == io.name


def _check_mapping_values(io: IO, values: list[Any], problems: list[Problem]) -> None:
    for index, row in enumerate(values):
        if not isinstance(row, Mapping) or io.name not in row:
            continue
        try:
            io.validate_value(row[io.name])
        except ValueError as exc:
            problems.append(
                _problem(
                    f"matrix value {row[io.name]!r} for `{io.name}` does not fit the input "
                    f"of type `{io.full_type}`: {exc}",
                    "matrix_param_type",
                    ("matrix", "values", index, io.name),
                )
            )


def _check_literal(name: str, io: IO, param: object, path: Path, problems: list[Problem]) -> None:
    value = getattr(param, "value", None)
    if value is None and io.is_optional is not True:
        problems.append(null_param(name, path))
        return
    if value is None or contains_template(value) or not io.type:
        return
    try:
        parsed = parse_value(io.type, value, is_list=io.is_list is True)
    except ValueError as exc:
        problems.append(
            _problem(
                f"could not parse value `{_shown(value)}` for `{name}` (type `{io.full_type}`): "
                f"{exc}",
                "param_type",
                (*path, "value"),
            )
        )
        return
    if io.is_delayed(default=False):
        return
    for error in check_validation(io.effective_validation, parsed):
        problems.append(invalid_param(name, error, path))


def _check_ref(
    name: str,
    io: IO,
    param: Param,
    path: Path,
    dag_context: Mapping[str, str | None] | None,
    problems: list[Problem],
) -> None:
    if dag_context is None or param.entity_kind == "runs":
        return  # only checkable inside a DAG; runs.<uuid> are resolved by the server
    key = param.searchable_ref
    if key is None:
        return
    if key not in dag_context:
        if param.entity_type == "artifacts":
            return  # artifacts can be logged at run time
        prefix = f"{param.ref}."
        if not any(k.startswith(prefix) for k in dag_context):
            return  # the target's component is unknown here (hub/url/path ref): cannot check
        known = sorted(k[len(prefix) :] for k in dag_context if k.startswith(prefix))
        # compared within its section (`outputs.`), which alone would make any two keys close
        section, _, key = str(param.value).partition(".")
        keys = [k.partition(".")[2] for k in known if k.startswith(f"{section}.")]
        match = suggest(key, keys) if key else None
        close = f"{section}.{match}" if match else None
        problems.append(
            _problem(
                f"param `{name}` has a ref value `{param.value}`, but `{param.ref}` has no such "
                "information",
                "ref_not_found",
                (*path, "value"),
                hint=f"did you mean `{close}`?"
                if close
                else "it provides: " + ", ".join(known[:12]) + (", ..." if len(known) > 12 else ""),
            )
        )
        return
    source_type = dag_context[key]
    target_type = io.full_type
    if source_type is None or target_type is None:
        return
    if is_list_type(source_type) != is_list_type(target_type):
        problems.append(
            _problem(
                f"param `{name}` feeds the input of type `{target_type}` from "
                f"`{param.value}` of `{param.ref}`, which has type `{source_type}`: "
                "one is a list and the other is not",
                "ref_list",
                (*path, "value"),
            )
        )
        return
    a = list_item_type(target_type) or target_type
    b = list_item_type(source_type) or source_type
    if not are_compatible(a, b):
        problems.append(
            _problem(
                f"param `{name}` has an input type `{target_type}` and it does not correspond to "
                f"the type of the value `{param.value}` received from `{param.ref}` with type "
                f"`{source_type}`",
                "ref_type",
                (*path, "value"),
            )
        )


_INIT_TYPES = frozenset({"git", "dockerfile", "artifacts", "path"})


def _check_to_init(name: str, io: IO, param: Param, path: Path, problems: list[Problem]) -> None:
    """``toInit`` needs a type that maps to an init container, or a connection (spec 3.2)."""
    if param.to_init is not True:
        return
    problem = to_init_problem(name, io, param.connection or io.connection, path)
    if problem is not None:
        problems.append(problem)


def _check_param(
    name: str,
    io: IO,
    param: object,
    path: Path,
    *,
    is_template: bool,
    dag_context: Mapping[str, str | None] | None,
    problems: list[Problem],
) -> None:
    if isinstance(param, Param):
        _check_to_init(name, io, param, path, problems)
        if param.is_ref:
            if not is_template:
                _check_ref(name, io, param, path, dag_context, problems)
            return
    _check_literal(name, io, param, path, problems)


def _check_join_param(
    name: str, io: IO, index: int, param: JoinParam, problems: list[Problem]
) -> None:
    if param.context_only is True:
        return
    if io.is_list_value or io.type == "artifacts":
        return
    problems.append(
        _problem(
            f"param `{name}` comes from a join, which gives a list of values, but the "
            f"input has type `{io.full_type}`",
            "join_param_type",
            ("joins", index, "params", name),
            hint=f"declare `{name}` with `isList: true` (or a `List[...]` type), "
            "or mark the join param `contextOnly: true`",
        )
    )


def validate_params(
    component: Component,
    params: Mapping[str, Param] | None,
    *,
    matrix: Matrix | None = None,
    joins: list[Join] | str | None = None,
    is_template: bool = False,
    dag_context: Mapping[str, str | None] | None = None,
    params_located: bool = True,
) -> list[Problem]:
    """Check an operation's ``params`` (and matrix and join params) against ``component``.

    Args:
        component: the component the operation runs.
        params: the operation's params (already in full form).
        matrix: the operation's matrix: its hp params (or mapping keys) provide inputs.
        joins: the operation's joins: their params provide list inputs.
        is_template: a template operation may leave required inputs unset.
        dag_context: inside a DAG, what refs may read: searchable key (``ops.a.outputs.loss``,
            ``dag.inputs.x``) -> type string or ``None``. ``None`` skips ref checks.
        params_located: the file has a ``params`` section; when it has none, a required input
            that nothing sets is reported at its declaration (``component.inputs[i]``).

    Returns:
        Every problem found; empty when the params fit.
    """
    given = _Given(
        params=dict(params or {}),
        join_params={},
        matrix=matrix,
        is_template=is_template,
        dag_context=dag_context,
    )
    given.join_params = {k: v for k, v in _join_params(joins).items() if k not in given.params}
    problems: list[Problem] = []
    declarations: list[tuple[str, int, IO]] = [
        *(("inputs", index, io) for index, io in enumerate(component.inputs or [])),
        *(("outputs", index, io) for index, io in enumerate(component.outputs or [])),
    ]
    for section, index, io in declarations:
        found = len(problems)
        _check_io(io, section == "outputs", given, problems)
        if not params_located:
            # no `params:` in the file to point at (a component checked on its own)
            problems[found:] = [
                p.relocated(("component", section, index)) if p.rule == "param_missing" else p
                for p in problems[found:]
            ]
    names = dict.fromkeys(io.name for io in component.ios)
    declared = ", ".join(f"`{name}`" for name in names) or "none"
    _check_unmatched(set(names), declared, given, problems)
    return problems


@dataclass
class _Given:
    """What an operation gives its component: params, join params, a matrix; and how to check
    them (a template operation, the refs a DAG op may read)."""

    params: dict[str, Param]
    join_params: dict[str, tuple[int, JoinParam]]
    matrix: Matrix | None
    is_template: bool
    dag_context: Mapping[str, str | None] | None


def _check_io(io: IO, is_output: bool, given: _Given, problems: list[Problem]) -> None:
    """The param, join param or matrix param that sets ``io``, or a problem if none does."""
    if io.name in given.params:
        _check_param(
            io.name,
            io,
            given.params[io.name],
            ("params", io.name),
            is_template=given.is_template,
            dag_context=given.dag_context,
            problems=problems,
        )
    elif io.name in given.join_params:
        index, join_param = given.join_params[io.name]
        _check_join_param(io.name, io, index, join_param, problems)
    elif _matrix_provides(given.matrix, io, problems):
        pass
    elif io.is_optional is True or given.is_template or io.is_delayed(default=is_output):
        return
    else:
        problems.append(missing_param(io, is_output=is_output))


def _check_unmatched(
    names: set[str], declared: str, given: _Given, problems: list[Problem]
) -> None:
    """Params and join params that match no input or output (context-only ones excepted)."""
    for name, param in given.params.items():
        if name in names:
            continue
        if getattr(param, "context_only", None) is True:
            if isinstance(param, Param) and param.is_ref and not given.is_template:
                # Not matched to an IO, so no type to compare; the target must still exist.
                # (An untyped IO built without validation: the name is the param's, and
                # validating it would build IO's own validator for nothing, a cost in `check`.)
                untyped = IO.model_construct(name=name)
                _check_ref(name, untyped, param, ("params", name), given.dag_context, problems)
            continue
        problems.append(unexpected_param(name, declared))
    for name, (index, join_param) in given.join_params.items():
        if name in names or join_param.context_only is True:
            continue
        problems.append(
            _problem(
                f"received unexpected join param `{name}`: the component has no input or "
                "output with that name",
                "param_unexpected",
                ("joins", index, "params", name),
                hint=f"declared inputs/outputs: {declared}; "
                "use `contextOnly: true` for a value only meant for templates",
            )
        )


def typed_params(component: Component, params: Mapping[str, Param] | None) -> dict[str, Any]:
    """The value of every input/output (and context-only param), typed, for compiling a run.

    A literal param is coerced to its IO type and checked against ``validation``; an IO without
    a param gets its default ``value``. Values holding ``{{ }}`` are returned as written (they are
    rendered later), and ref params are left out (their values come from other runs).

    Raises:
        ValueError: a literal does not fit its IO (``validate_params`` reports these first).
    """
    params = dict(params or {})
    result: dict[str, Any] = {}
    for io in component.ios:
        param = params.get(io.name)
        if param is None:
            result[io.name] = io.validate_value(io.value) if io.value is not None else None
        elif param.is_ref:
            continue
        else:
            try:
                result[io.name] = io.validate_value(param.value)
            except ValueError as exc:
                raise ValueError(f"param `{io.name}`: {exc}") from None
    for name, param in params.items():
        if name not in result and param.is_context_only and not param.is_ref:
            result[name] = param.value
    return result
