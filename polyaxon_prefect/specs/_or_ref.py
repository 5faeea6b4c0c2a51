"""Value-or-template field types with messages that name the field.

Polyaxon types many fields as ``T | RefField``: a literal, or a ``{{ template }}`` resolved later.
A plain pydantic union reports one error per branch ("should be greater than 0" *and* "should be a
valid string"), which reads badly; the scalar types here check the value once and say what is
expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Annotated, Any, TypeVar, Union

from pydantic import StrictStr, ValidationInfo
from pydantic.alias_generators import to_camel

from polyaxon_prefect.specs._base import Check, Ref, is_template

__all__ = [
    "BoolOrRef",
    "FloatOrRef",
    "IntOrRef",
    "OrRef",
    "PositiveIntOrRef",
    "StrListOrRef",
    "as_number",
]

_T = TypeVar("_T")


class OrRef:
    """``OrRef[T]`` is ``T | Ref``: a literal of type ``T`` or a ``{{ template }}``."""

    def __class_getitem__(cls, item: object) -> Any:
        return Union[item, Ref]  # noqa: UP007 -- ``item`` may be a typing form


def _name(info: ValidationInfo) -> str:
    return to_camel(info.field_name) if info.field_name else "value"


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real) and float(value).is_integer():
        return int(math.trunc(value))  # noqa: RUF046 -- typeshed: Real.__trunc__ -> Integral
    return _from_text(int, value)


def _from_text(parse: Callable[[str], _T], value: object) -> _T | None:
    """A string (YAML quotes a number) as ``parse`` reads it; None for what it cannot read
    and for anything but a string."""
    if isinstance(value, str):
        try:
            return parse(value.strip())
        except ValueError:
            return None
    return None


def _or_ref(
    read: Callable[[object], object | None], expected: str
) -> Callable[[object, ValidationInfo], object]:
    """A validator: a ``{{ template }}`` as it is, else the value ``read`` makes of it; when
    ``read`` makes none, the field must be ``expected``."""

    def validate(value: object, info: ValidationInfo) -> object:
        if is_template(value):
            return value
        read_value = read(value)
        if read_value is None:
            raise ValueError(
                f"`{_name(info)}` must be {expected} or a `{{{{ template }}}}`, got {value!r}"
            )
        return read_value

    return validate


_int_or_ref = _or_ref(_as_int, "an integer")


def _positive_int_or_ref(value: object, info: ValidationInfo) -> object:
    number = _int_or_ref(value, info)
    if isinstance(number, int) and number < 1:
        raise ValueError(f"`{_name(info)}` must be at least 1, got {number}")
    return number


def as_number(value: object) -> float | None:
    """A number, or a string that holds one (YAML quotes), as a float; None for anything else,
    bools included."""
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    return _from_text(float, value)


def _as_finite(value: object) -> float | None:
    number = as_number(value)
    return number if number is not None and math.isfinite(number) else None


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


_float_or_ref = _or_ref(_as_finite, "a number")
_bool_or_ref = _or_ref(_as_bool, "true, false")


IntOrRef = Annotated[int | Ref, Check(_int_or_ref, mode="before", info=True)]
"""An integer, or a ``{{ template }}`` resolved later."""

PositiveIntOrRef = Annotated[int | Ref, Check(_positive_int_or_ref, mode="before", info=True)]
"""An integer >= 1 (Polyaxon's ``PositiveInt``), or a ``{{ template }}``."""

FloatOrRef = Annotated[float | Ref, Check(_float_or_ref, mode="before", info=True)]
"""A finite number, or a ``{{ template }}``."""

BoolOrRef = Annotated[bool | Ref, Check(_bool_or_ref, mode="before", info=True)]
"""A boolean (or ``"true"``/``"false"``), or a ``{{ template }}``."""

StrListOrRef = list[StrictStr] | Ref
"""A list of strings, or a ``{{ template }}``."""
