"""Jinja templating of Polyaxonfile values, with Polyaxon's typing of the rendered text.

Polyaxon renders every ``{{ }}``/``{% %}`` string with a plain ``jinja2.Environment`` and reads the
result back with ``ast.literal_eval``, so ``"{{ lr }}"`` becomes the float ``0.01`` and
``"{{ layers }}"`` the list ``[1, 2]``. We keep that typing but change two things on purpose:

* Undefined names are errors (``StrictUndefined``). Polyaxon renders them as ``""``, so a typo in
  ``--lr={{ lrr }}`` silently runs the job with ``--lr=``.
* Templates run in Jinja's immutable sandbox: ``{{ x.__class__ }}`` and friends fail, and a template
  cannot mutate the context that every later render shares.

Only rendered strings are read back as literals. Polyaxon also converts untemplated strings
(``"[1, 2]"`` becomes a list), but in our pipeline YAML has already typed every untemplated value:
a string that is still a string was quoted by its author (``tag: "1.0"``, ``version: "01"``), and
turning it into a number would overrule them. Rendered text is different: the value lost its
type on the way through Jinja, and ``literal_eval`` is how it gets it back.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import Environment, StrictUndefined, Template, TemplateSyntaxError, UndefinedError
from jinja2.exceptions import SecurityError
from jinja2.utils import missing

from polyaxon_prefect.exceptions import HintedError, Problem
from polyaxon_prefect.loading._sandbox import (
    bound_filters,
    bounded_environment,
    check_size,
    start_budget,
)

__all__ = [
    "FALSE_WORDS",
    "TRUE_WORDS",
    "ParamValue",
    "TemplateError",
    "as_str",
    "build_context",
    "evaluate_expression",
    "map_format",
    "read_literal",
    "render_bool",
    "render_text",
    "render_value",
]

TRUE_WORDS = frozenset({"y", "yes", "t", "true", "on", "1"})
FALSE_WORDS = frozenset({"n", "no", "f", "false", "off", "0"})

RESERVED_NAMES = frozenset({"params", "globals", "connections", "dag", "ops"})

# literal_eval on huge rendered strings is slow and can exhaust the parser; such text stays text.
_MAX_LITERAL_CHARS = 100_000


class TemplateError(HintedError):
    """A template could not be rendered, or rendered to something unusable.

    ``path`` locates the failing string inside the value given to `render_value` (empty for a
    plain string), so a caller can prefix it with the field path and point at ``file:line:col``.
    """

    def __init__(
        self,
        message: str,
        *,
        template: str | None = None,
        path: tuple[str | int, ...] = (),
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.template = template
        self.path = path

    def at(self, *prefix: str | int) -> TemplateError:
        """The same error located ``prefix`` levels deeper in the enclosing value."""
        return TemplateError(
            self.message, template=self.template, path=(*prefix, *self.path), hint=self.hint
        )

    def problem(self, prefix: tuple[str | int, ...] = ()) -> Problem:
        """This error as a `Problem` at ``prefix + path``, for `PolyaxonfileError`."""
        return Problem(self.message, rule="template", path=(*prefix, *self.path), hint=self.hint)


def map_format(value: object, pattern: str, variable_name: str | None = None) -> str:
    """Polyaxon's one custom filter: ``pattern % value`` or ``pattern % {variable_name: value}``.

    Meant for ``{{ items | map('map_format', '--x=%s') | join(' ') }}``.
    """
    if variable_name:
        formatted: str = pattern % {variable_name: value}
    else:
        formatted = pattern % value
    return formatted


# --------------------------------------------------------------------------------------------------
# Context objects


def _plain(value: object) -> Any:
    """Unwrap namespaces so ``str()`` and ``|tojson`` show ordinary dicts."""
    if isinstance(value, _Namespace):
        return {key: _plain(item) for key, item in value._data.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


class _Namespace:
    """A read-only mapping whose keys are reachable as attributes, and only its keys.

    A plain dict would answer ``params.values`` or ``params.items`` with its own methods, so a
    param named ``values`` could never be reached; here every public attribute is a key.
    """

    __slots__ = ("_data", "_label")

    def __init__(self, data: Mapping[str, Any], label: str) -> None:
        self._data = dict(data)
        self._label = label

    def _wrap(self, key: str, value: object) -> Any:
        if isinstance(value, Mapping) and not isinstance(value, _Namespace):
            return _Namespace(value, f"{self._label}.{key}")
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._wrap(name, self._data[name])
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return self._wrap(key, self._data[key])

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Namespace):
            return self._data == other._data
        return bool(_plain(self) == other)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(_plain(self))

    def __repr__(self) -> str:
        return f"<{self._label} {_plain(self)!r}>"


class _UndefinedName(UndefinedError):
    """A top-level name that is not in the context."""


class _UndefinedKey(UndefinedError):
    """A key missing from a namespace (the message lists what it has)."""


class _Undefined(StrictUndefined):
    """StrictUndefined whose errors name what is missing and what exists instead."""

    __slots__ = ()

    def __init__(
        self,
        hint: str | None = None,
        obj: object = missing,
        name: str | None = None,
        exc: type[Exception] = UndefinedError,
    ) -> None:
        if exc is UndefinedError and hint is None:
            if obj is missing:
                exc = _UndefinedName
            elif isinstance(obj, _Namespace):
                exc = _UndefinedKey
        super().__init__(hint, obj, name, exc)  # type: ignore[arg-type]

    @property
    def _undefined_message(self) -> str:
        if self._undefined_exception is _UndefinedName:
            return f"undefined name `{self._undefined_name}`"
        if self._undefined_exception is _UndefinedKey:
            scope: _Namespace = self._undefined_obj
            keys = ", ".join(sorted(scope._data)) or "nothing"
            label = scope._label
            return f"undefined name `{label}.{self._undefined_name}`; {label} has: {keys}"
        return super()._undefined_message


def _json_default(value: object) -> Any:
    if isinstance(value, _Namespace):
        return _plain(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_ENV = bounded_environment(undefined=_Undefined, autoescape=False, keep_trailing_newline=True)
_ENV.filters["map_format"] = map_format
bound_filters(_ENV)
_ENV.policies["json.dumps_kwargs"] = {"sort_keys": True, "default": _json_default}


def template_environment() -> Environment:
    """The one sandboxed environment every template renders in (filters and globals included),
    for `check` to parse templates the way a run will."""
    return _ENV


@lru_cache(maxsize=1024)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_text(template: str, context: Mapping[str, Any]) -> str:
    """Render one template string to text, turning every failure into a `TemplateError`."""
    shown = template if len(template) <= 200 else template[:197] + "..."
    start_budget()
    try:
        return check_size(_compile(template).render(context))
    except (_UndefinedName, _UndefinedKey) as exc:
        head, _, tail = (exc.message or "").partition("; ")
        message = f"{head} in `{shown}`" + (f"; {tail}" if tail else "")
        if isinstance(exc, _UndefinedName):
            names = ", ".join(sorted(str(key) for key in context)) or "nothing"
            message += f"; available: {names}"
        raise TemplateError(
            message,
            template=template,
            hint="declare it as an input or pass it as a param, or use `| default(...)`",
        ) from exc
    except SecurityError as exc:
        costly = "template" in str(exc) or "render" in str(exc) or "argument" in str(exc)
        raise TemplateError(
            f"unsafe template `{shown}`: {str(exc).rstrip('.')}",
            template=template,
            hint=(
                "templates are bounded (POLYAXON_PREFECT_MAX_TEMPLATE_SIZE, "
                "POLYAXON_PREFECT_MAX_TEMPLATE_ITERATIONS, POLYAXON_PREFECT_TEMPLATE_TIMEOUT)"
                if costly
                else "templates may only read params, globals and connections"
            ),
        ) from exc
    except (MemoryError, RecursionError, OverflowError) as exc:
        raise TemplateError(
            f"rendering `{shown}` needs too much: {type(exc).__name__}", template=template
        ) from exc
    except TemplateSyntaxError as exc:
        raise TemplateError(
            f"invalid template syntax in `{shown}`: {exc.message} (template line {exc.lineno})",
            template=template,
        ) from exc
    except UndefinedError as exc:
        raise TemplateError(f"{exc.message} in `{shown}`", template=template) from exc
    except Exception as exc:
        raise TemplateError(
            f"rendering `{shown}` failed: {type(exc).__name__}: {exc}", template=template
        ) from exc


def evaluate_expression(source: str, context: Mapping[str, Any]) -> Any:
    """The value (not the text) of one Jinja expression (``params.as_args``), in the same
    bounded sandbox as every render; raises what the expression raises."""
    start_budget()
    return _ENV.compile_expression(source, undefined_to_none=False)(**context)


def read_literal(text: str) -> Any:
    """Polyaxon's ``ast.literal_eval`` read-back, limited to YAML-shaped results."""
    if not text.strip() or len(text) > _MAX_LITERAL_CHARS:
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    if isinstance(value, tuple):
        value = list(value)
    if value is None or isinstance(value, bool | int | float | str | list | dict):
        return value
    return text  # complex numbers, sets, bytes, Ellipsis: not values a Polyaxonfile holds


def _is_template(value: object) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def render_value(value: object, context: Mapping[str, Any]) -> Any:
    """Render every template string inside ``value`` (recursing into dicts and lists).

    A rendered string is read back as a Python literal like Polyaxon does: ``"{{ lr }}"`` gives
    ``0.01``, ``"{{ layers }}"`` gives ``[1, 2]``, ``"n={{ n }}"`` stays ``"n=5"`` and ``"01"``
    stays ``"01"``. Rendering happens once: text produced by a template is never rendered again,
    so a param value that happens to contain ``{{`` cannot inject template code. Inputs are not
    modified.
    """
    if isinstance(value, str):
        if not _is_template(value):
            return value
        return read_literal(render_text(value, context))
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            try:
                out[key] = render_value(item, context)
            except TemplateError as exc:
                raise exc.at(key) from exc.__cause__
        return out
    if isinstance(value, list | tuple):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(render_value(item, context))
            except TemplateError as exc:
                raise exc.at(index) from exc.__cause__
        return items
    return value


def render_bool(expr: object, context: Mapping[str, Any]) -> bool:
    """Evaluate a ``conditions`` expression to a bool.

    The rendered text must be a boolean word (true: y yes t true on 1; false: n no f false off
    0; any case), as in Polyaxon. Anything else is an error rather than "false", so a condition
    that renders ``"maybe"`` or an empty string does not quietly skip an op.
    """
    if isinstance(expr, bool):
        return expr
    if not isinstance(expr, str):
        raise TemplateError(
            f"conditions must be a string expression, got {type(expr).__name__} {expr!r}"
        )
    text = render_text(expr, context) if _is_template(expr) else expr
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    hint = (
        "write the expression inside `{{ }}`, e.g. `{{ params.lr.value > 0.1 }}`"
        if not _is_template(expr)
        else "make the expression evaluate to a boolean, e.g. with a comparison"
    )
    raise TemplateError(
        f"conditions must evaluate to a boolean (true/false, yes/no, on/off, 1/0), "
        f"but `{expr}` gave {text!r}",
        template=expr,
        hint=hint,
    )


# --------------------------------------------------------------------------------------------------
# Params: display value, as_str, as_arg


def as_str(value: object) -> str:
    """How a param value is written on a command line.

    bool -> ``true``/``false``; lists and dicts -> compact JSON (``[1,2]``, ``{"a":1}``); None ->
    ``""``; anything else -> ``str(value)``.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


@dataclass(frozen=True)
class ParamValue:
    """A resolved param as templates see it: its value plus the IO facts that shape ``as_arg``."""

    value: Any = None
    type: str | None = None
    is_flag: bool = False
    arg_format: str | None = None
    connection: str | None = None

    def as_str(self) -> str:
        return as_str(self.value)

    def as_arg(self, name: str) -> str:
        """``--name=value``, the ``argFormat`` rendering, or ``--name``/``""`` for flags.

        A bool without ``isFlag`` gives ``--name=true`` (Polyaxon's behaviour, which its own
        docstring misdescribes as ``--name``).
        """
        if self.arg_format:
            if self.value is None:
                return ""
            try:
                return render_text(self.arg_format, {name: self.value})
            except TemplateError as exc:
                raise TemplateError(
                    f"argFormat of param `{name}`: {exc.message}",
                    template=self.arg_format,
                    hint=f"an argFormat can only use `{{{{ {name} }}}}`",
                ) from exc
        if self.is_flag:
            return f"--{name}" if self.value else ""
        if self.value is None:
            return ""
        return f"--{name}={as_str(self.value)}"

    def display(self, name: str) -> Any:
        """The value of the top-level ``{{ name }}`` variable."""
        if self.is_flag:
            return self.as_arg(name)
        if self.type == "str" and self.value is not None:
            return str(self.value)
        if self.type == "image" and isinstance(self.value, str):
            return ImageRef(self.value, self.connection)
        return self.value


class ImageRef(str):
    """An image param as templates see it: the image itself, plus ``.name`` and ``.connection``.

    Polyaxon's hub components write ``{{ destination.name }}`` and ``{{ destination.connection }}``
    for the registry an image is pushed to; ``{{ destination }}`` stays the plain image string.
    """

    connection: str | None

    def __new__(cls, image: str, connection: str | None = None) -> ImageRef:
        ref = super().__new__(cls, image)
        ref.connection = connection
        return ref

    @property
    def name(self) -> str:
        return str(self)


def build_context(
    params: Mapping[str, ParamValue],
    *,
    globals: Mapping[str, Any] | None = None,
    connections: Mapping[str, Any] | None = None,
    dag_inputs: Mapping[str, Any] | None = None,
    ops: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Jinja context Polyaxon documents.

    * ``{{ name }}``: each param's display value (a flag renders ``--name`` or ``""``);
    * ``params.<name>``: ``.value``, ``.type``, ``.connection``, ``.as_str``, ``.as_arg``;
    * ``params.as_args``: the non-empty ``as_arg`` of every param, in order;
    * ``globals.<key>``, ``connections.<name>`` (when given);
    * ``dag.inputs.<name>`` and ``ops.<op>.outputs.<name>`` (when given): Polyaxon's docs promise
      these but its resolver never fills them; we do when the caller knows the values.
    """
    context: dict[str, Any] = {}
    for name, param in params.items():
        if name in RESERVED_NAMES:
            raise TemplateError(
                f"param name `{name}` collides with the template namespace `{name}`",
                hint=f"rename the input; {', '.join(sorted(RESERVED_NAMES))} are reserved",
            )
        if name == "as_args":
            raise TemplateError(
                "param name `as_args` collides with `params.as_args`", hint="rename the input"
            )
        context[name] = param.display(name)

    entries: dict[str, Any] = {}
    as_args: list[str] = []
    for name, param in params.items():
        arg = param.as_arg(name)
        entries[name] = _Namespace(
            {
                "value": param.value,
                "type": param.type,
                "connection": param.connection,
                "as_str": param.as_str(),
                "as_arg": arg,
            },
            f"params.{name}",
        )
        if arg:
            as_args.append(arg)
    entries["as_args"] = as_args
    context["params"] = _Namespace(entries, "params")
    context["globals"] = _Namespace(globals or {}, "globals")
    if connections is not None:
        context["connections"] = _Namespace(connections, "connections")
    if dag_inputs is not None:
        context["dag"] = _Namespace({"inputs": dag_inputs}, "dag")
    if ops is not None:
        context["ops"] = _Namespace(ops, "ops")
    return context
