"""A component's inputs as a typed Python signature, so Prefect shows (and checks) a typed form.

Prefect builds a flow's parameter schema (what its UI renders as a form, and what deployments
enforce) from the flow function's signature. A compiled component has no Python function of its
own, so one is made: ``**kwargs`` with an explicit ``__signature__`` whose keyword-only
parameters carry the annotations and defaults derived here.

Type mapping: Polyaxon's scalar and container types become the matching Python types
(``List[int]`` -> ``list[int]``), ``validation.options`` becomes a ``Literal`` (a drop-down in the
UI) and ``gt``/``ge``/``lt``/``le`` become field bounds; the many string-like types (``path``,
``uri``, ``s3``, ``image``, ...) become ``str``; structured and unknown types become ``Any``, and
Polyaxon's own coercion (``load_polyaxonfile``) checks them when the flow runs.
"""

from __future__ import annotations

import inspect
import keyword
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, Union

from polyaxon_prefect.specs._base import is_template
from polyaxon_prefect.specs.params._types import TEXT_TYPES, TypeSpec, parse_type

if TYPE_CHECKING:
    from polyaxon_prefect.specs import IO, Component

__all__ = ["FlowParam", "flow_params", "flow_signature", "python_name"]

_SCALARS: dict[str, Any] = {
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "PositiveInt": int,
    "NegativeInt": int,
    "NonNegativeInt": int,
    "NonPositiveInt": int,
    "PositiveFloat": float,
    "NegativeFloat": float,
    "NonNegativeFloat": float,
    "NonPositiveFloat": float,
    "StrictInt": int,
    "StrictFloat": float,
    "StrictBool": bool,
    "StrictStr": str,
    "metric": float,
}
_BOUNDS = ("gt", "ge", "lt", "le")
_NOT_IDENTIFIER = re.compile(r"\W")


@dataclass(frozen=True)
class FlowParam:
    """One flow parameter: its Python name, the input it feeds, its annotation and default."""

    name: str
    io_name: str
    annotation: Any
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


def python_name(io_name: str) -> str:
    """A keyword-argument name for an input (Polyaxon allows ``-`` in names, Python does not)."""
    name = _NOT_IDENTIFIER.sub("_", io_name)
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = f"_{name}"
    return name


def _annotation(spec: TypeSpec) -> object:
    """The Python type for a parsed Polyaxon type (``Any`` when there is no faithful one)."""
    if not spec.known or spec.name == "any":
        return Any
    if spec.name in _SCALARS:
        return _SCALARS[spec.name]
    if spec.name in TEXT_TYPES:
        return str
    if spec.name == "none":
        return type(None)
    if spec.name == "literal" and spec.literals:
        return Literal[spec.literals]
    if spec.name in ("list", "set", "tuple"):
        item = _annotation(spec.args[0]) if len(spec.args) == 1 else Any
        return list[item]  # type: ignore[valid-type]
    if spec.name == "dict":
        if len(spec.args) == 2:
            return dict[_annotation(spec.args[0]), _annotation(spec.args[1])]  # type: ignore[misc]
        return dict[str, Any]
    if spec.name == "dict_of_dicts":
        return dict[str, dict[str, Any]]
    if spec.name in ("union", "optional"):
        members = tuple(_annotation(arg) for arg in spec.args)
        if Any in members or not members:
            return Any
        return Union[members] if len(members) > 1 else members[0]  # noqa: UP007
    return Any  # structured objects (git, artifacts, dockerfile, ...) and anything newer


def _jsonable(value: object) -> object:
    """A default the UI can show and Prefect can store (typed models back to plain data)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _constrained(io: IO, base: object) -> object:
    """``base`` narrowed by the input's literal ``options`` and bounds, with its description."""
    from pydantic import Field

    validation = getattr(io, "effective_validation", None)
    options = getattr(validation, "options", None)
    if (
        base in (int, float, str)
        and isinstance(options, list)
        and options
        and not any(is_template(o) for o in options if isinstance(o, str))
        and all(isinstance(o, base) and not isinstance(o, bool) for o in options)
    ):
        base = Literal[tuple(options)]
    field_kwargs: dict[str, Any] = {}
    if base in (int, float):
        for bound in _BOUNDS:
            value = getattr(validation, bound, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                field_kwargs[bound] = value
    if io.description:
        field_kwargs["description"] = io.description
    if field_kwargs:
        return Annotated[base, Field(**field_kwargs)]
    return base


def flow_params(
    component: Component | None, literal_params: dict[str, Any] | None = None
) -> list[FlowParam]:
    """The flow parameters for a component's inputs, in their declared order.

    ``literal_params`` are the values an operation file already gives (``params:``); they become
    the defaults, so ``to_flow(operation.yaml)`` needs no arguments for them. A default holding
    ``{{ }}`` is typed ``Any``: it is rendered when the run is compiled, not checked here.
    """
    literal_params = literal_params or {}
    params: list[FlowParam] = []
    used: set[str] = set()
    for io in (component.inputs if component is not None else None) or []:
        name = python_name(io.name)
        if name in used:
            raise ValueError(
                f"inputs `{io.name}` and another input map to the same parameter name `{name}`"
            )
        used.add(name)
        spec = parse_type(io.type)
        if io.is_list is True:
            spec = TypeSpec("list", (spec,))
        annotation = _constrained(io, _annotation(spec))
        if io.name in literal_params and literal_params[io.name] is not None:
            default: Any = _jsonable(literal_params[io.name])
        elif io.value is not None:
            default = _jsonable(io.value)
        elif io.is_optional is True:
            default = None
        else:
            default = inspect.Parameter.empty
        if isinstance(default, str) and is_template(default):
            annotation = Any
        elif default is None and annotation is not Any:
            annotation = Optional[annotation]  # noqa: UP045
        params.append(FlowParam(name, io.name, annotation, default))
    return params


def flow_signature(params: list[FlowParam]) -> inspect.Signature:
    """Keyword-only parameters, so required ones may follow optional ones (declared order)."""
    return inspect.Signature(
        [
            inspect.Parameter(
                p.name, inspect.Parameter.KEYWORD_ONLY, annotation=p.annotation, default=p.default
            )
            for p in params
        ],
        return_annotation=Any,
    )
