"""Component inputs and outputs (spec 2.1) and their value predicates (``validation``)."""

import re
from collections.abc import Callable
from typing import Any

from pydantic import StrictStr, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, is_template
from polyaxon_prefect.specs._or_ref import BoolOrRef, IntOrRef
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.params._types import is_list_type, parse_value

__all__ = ["IO", "IO_NAME_BLACK_LIST", "Validation", "check_validation", "contains_template"]

IO_NAME_BLACK_LIST = frozenset({"globals", "params", "connections"})
"""Names taken by the template context: an input called ``params`` would shadow ``params.*``."""

_IO_NAME = re.compile(r"^[-a-zA-Z0-9_]+\Z")

Number = Templated[int | float]
StrList = Templated[list[StrictStr]]


class Validation(BaseSpec):
    """Predicates a value must satisfy (Polyaxon v2 ``V1Validation``).

    Scalar predicates apply element-wise to lists and to dict values; ``minItems``/``maxItems``
    to the container; the key predicates to dicts. ``delay`` postpones the check to compile time.
    """

    delay: BoolOrRef | None = None
    gt: Number | None = None
    ge: Number | None = None
    lt: Number | None = None
    le: Number | None = None
    multiple_of: Number | None = None
    min_digits: IntOrRef | None = None
    max_digits: IntOrRef | None = None
    decimal_places: IntOrRef | None = None
    regex: StrictStr | None = None
    min_length: IntOrRef | None = None
    max_length: IntOrRef | None = None
    contains: Any = None
    excludes: Any = None
    options: Any = None
    min_items: IntOrRef | None = None
    max_items: IntOrRef | None = None
    keys: StrList | None = None
    contains_keys: StrList | None = None
    excludes_keys: StrList | None = None

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None and not is_template(value):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"`regex` is not a valid regular expression: {exc}") from None
        return value


def _digits(value: object) -> int:
    return len(str(value).replace(".", "").replace("-", ""))


def _decimals(value: object) -> int:
    text = str(value)
    return len(text.split(".", 1)[1]) if "." in text else 0


# (field, failing test, message). A test returns True when the value breaks the rule.
_SCALAR_RULES: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("gt", lambda v, c: v <= c, "must be greater than `{c}`"),
    ("ge", lambda v, c: v < c, "must be greater than or equal to `{c}`"),
    ("lt", lambda v, c: v >= c, "must be less than `{c}`"),
    ("le", lambda v, c: v > c, "must be less than or equal to `{c}`"),
    ("multiple_of", lambda v, c: v % c != 0, "must be a multiple of `{c}`"),
    ("min_digits", lambda v, c: _digits(v) < c, "must have at least `{c}` digits"),
    ("max_digits", lambda v, c: _digits(v) > c, "must have at most `{c}` digits"),
    ("decimal_places", lambda v, c: _decimals(v) > c, "must have at most `{c}` decimal places"),
    ("regex", lambda v, c: not re.match(c, v), "must match the regex `{c}`"),
    ("min_length", lambda v, c: len(v) < c, "must have at least `{c}` characters"),
    ("max_length", lambda v, c: len(v) > c, "must have at most `{c}` characters"),
    ("contains", lambda v, c: c not in v, "must contain `{c}`"),
    ("excludes", lambda v, c: c in v, "must not contain `{c}`"),
    ("options", lambda v, c: v not in c, "must be one of `{c}`"),
)
_CONTAINER_RULES: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("min_items", lambda v, c: len(v) < c, "must have at least `{c}` items"),
    ("max_items", lambda v, c: len(v) > c, "must have at most `{c}` items"),
)
_DICT_RULES: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("keys", lambda v, c: set(v) != set(c), "must have exactly the keys `{c}`"),
    ("contains_keys", lambda v, c: not all(k in v for k in c), "must contain the keys `{c}`"),
    (
        "excludes_keys",
        lambda v, c: any(k in v for k in c),
        "must not contain any of the keys `{c}`",
    ),
)


def _apply(
    rules: tuple[tuple[str, Callable[[Any, Any], bool], str], ...],
    validation: Validation,
    value: object,
    errors: list[str],
) -> None:
    for field, fails, message in rules:
        constraint = getattr(validation, field)
        if constraint is None or is_template(constraint):
            continue  # unset, or a `{{ }}` only known at compile time
        try:
            broken = fails(value, constraint)
        except (TypeError, ValueError, ZeroDivisionError, re.error):
            errors.append(f"value `{value!r}` cannot be checked with `{field}: {constraint}`")
            continue
        if broken:
            errors.append(f"value `{value!r}` " + message.format(c=constraint))


def check_validation(validation: Validation | None, value: object) -> list[str]:
    """Every predicate of ``validation`` that ``value`` breaks, as plain sentences.

    ``None`` passes (optionality is checked elsewhere); a template constraint is skipped.
    """
    if validation is None or value is None:
        return []
    errors: list[str] = []
    if isinstance(value, list | tuple | set):
        for item in value:
            _apply(_SCALAR_RULES, validation, item, errors)
    elif isinstance(value, dict):
        for item in value.values():
            _apply(_SCALAR_RULES, validation, item, errors)
    else:
        _apply(_SCALAR_RULES, validation, value, errors)
    if isinstance(value, list | tuple | set | dict):
        _apply(_CONTAINER_RULES, validation, value, errors)
    if isinstance(value, dict):
        _apply(_DICT_RULES, validation, value, errors)
    return errors


def contains_template(value: object) -> bool:
    """Whether a value holds a ``{{ }}`` anywhere, so it can only be checked once rendered."""
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(contains_template(k) or contains_template(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains_template(v) for v in value)
    return False


class IO(BaseSpec):
    """An input or output of a component: a name, a type and an optional default ``value``.

    Declaring ``value`` (even ``null``) makes the IO optional, as in Polyaxon. A default is
    checked against the type (and ``validation``) where it is declared. The type string may be
    unknown (say, from a newer Polyaxon): that is only an error once a value must be checked.
    """

    name: StrictStr
    description: StrictStr | None = None
    type: StrictStr | None = None
    is_optional: BoolOrRef | None = None
    is_list: BoolOrRef | None = None
    is_flag: BoolOrRef | None = None
    arg_format: StrictStr | None = None
    connection: StrictStr | None = None
    to_init: BoolOrRef | None = None
    to_env: StrictStr | None = None
    validation: Validation | None = None
    delay_validation: BoolOrRef | None = None
    options: Any = None
    # Last, so its validator sees every other field.
    value: Any = None

    @model_validator(mode="before")
    @classmethod
    def _value_implies_optional(cls, data: Any) -> Any:
        implied = isinstance(data, dict) and "value" in data
        if implied and "isOptional" not in data and "is_optional" not in data:
            data = {**data, "isOptional": True}
        return data

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if name in IO_NAME_BLACK_LIST:
            raise PydanticCustomError(
                "io_name_reserved",
                "the name `{name}` is taken by the template context ({reserved}): "
                "an input or output cannot use it",
                {
                    "name": name,
                    "reserved": ", ".join(sorted(IO_NAME_BLACK_LIST)),
                    "hint": "rename the input/output",
                },
            )
        if not _IO_NAME.match(name):
            raise PydanticCustomError(
                "io_name",
                "an input/output name must be a slug (ASCII letters a-z and A-Z, digits 0-9, `-` "
                "and `_`; no dots, spaces or other Unicode letters), "
                "got `{name}`",
                {"name": name},
            )
        return name

    @field_validator("is_flag")
    @classmethod
    def _flag_needs_bool(cls, is_flag: object, info: ValidationInfo) -> object:
        io_type = info.data.get("type")
        if is_flag is True and io_type != "bool":
            raise PydanticCustomError(
                "io_flag_type",
                "`isFlag` is only allowed for inputs of type `bool`, this one has type `{type}`",
                {"type": io_type, "hint": "remove `isFlag` or set `type: bool`"},
            )
        return is_flag

    @field_validator("value")
    @classmethod
    def _check_value(cls, value: object, info: ValidationInfo) -> object:
        if value is None:
            return value
        name = info.data.get("name", "?")
        if info.data.get("is_optional") is False:
            raise PydanticCustomError(
                "io_default_not_optional",
                "IO `{name}` is not optional and has default value `{value}`",
                {
                    "name": name,
                    "value": str(value),
                    "hint": "either make it optional (remove `isOptional: false`) "
                    "or remove the default value",
                },
            )
        if "type" not in info.data or contains_template(value):
            return value
        io_type = info.data.get("type")
        if io_type is None:
            return value
        try:
            parsed = parse_value(io_type, value, is_list=info.data.get("is_list") is True)
        except ValueError as exc:
            raise ValueError(
                f"default value {value!r} of `{name}` is not a `{io_type}`: {exc}"
            ) from None
        problems = check_validation(_effective_validation(info.data), parsed)
        if problems:
            raise ValueError(f"default value of `{name}`: " + "; ".join(problems))
        return parsed

    @property
    def full_type(self) -> str | None:
        """The type with ``isList`` folded in (``List[float]``), as refs compare them."""
        if self.type is None:
            return "list" if self.is_list is True else None
        if self.is_list is True and not is_list_type(self.type):
            return f"List[{self.type}]"
        return self.type

    @property
    def is_list_value(self) -> bool:
        """Whether values are lists, by ``isList`` or by a list type."""
        return self.is_list is True or is_list_type(self.type)

    @property
    def effective_validation(self) -> Validation | None:
        """``validation`` with the deprecated top-level ``options`` folded in."""
        return _effective_validation({"validation": self.validation, "options": self.options})

    def is_delayed(self, *, default: bool = False) -> bool:
        """Whether checking is postponed: ``delayValidation``, else ``validation.delay``, else
        ``default`` (Polyaxon delays outputs by default)."""
        if self.delay_validation is not None:
            return self.delay_validation is True
        if self.validation is not None and self.validation.delay is not None:
            return self.validation.delay is True
        return default

    def validate_value(self, value: object) -> Any:
        """The typed value for a param given to this IO, checked against ``validation``.

        Raises:
            ValueError: wrong type, broken predicate, or ``None`` for a required IO.
        """
        if value is None:
            if self.is_optional is True:
                return None
            raise ValueError(f"`{self.name}` is not optional, it needs a value (got null)")
        if contains_template(value):
            return value
        parsed = parse_value(self.type, value, is_list=self.is_list is True) if self.type else value
        problems = check_validation(self.effective_validation, parsed)
        if problems:
            raise ValueError("; ".join(problems))
        return parsed


def _effective_validation(data: dict[str, Any]) -> Validation | None:
    validation: Validation | None = data.get("validation")
    options = data.get("options")
    if options is None:
        return validation
    if validation is None:
        return Validation(options=options)
    if validation.options is None:
        return validation.model_copy(update={"options": options})
    return validation
