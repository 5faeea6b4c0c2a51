"""Value-or-template field types with messages that name the field.

Polyaxon types many fields as ``T | RefField``: a literal, or a ``{{ template }}`` resolved later.
A plain pydantic union reports one error per branch ("should be greater than 0" *and* "should be a
valid string"), which reads badly; the scalar types here check the value once and say what is
expected.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Annotated, Any, Union

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
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _int_or_ref(value: object, info: ValidationInfo) -> object:
    if is_template(value):
        return value
    number = _as_int(value)
    if number is None:
        raise ValueError(
            f"`{_name(info)}` must be an integer or a `{{{{ template }}}}`, got {value!r}"
        )
    return number


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
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _float_or_ref(value: object, info: ValidationInfo) -> object:
    if is_template(value):
        return value
    number = as_number(value)
    if number is None or not math.isfinite(number):
        raise ValueError(
            f"`{_name(info)}` must be a number or a `{{{{ template }}}}`, got {value!r}"
        )
    return number


def _bool_or_ref(value: object, info: ValidationInfo) -> object:
    if is_template(value) or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(
        f"`{_name(info)}` must be true, false or a `{{{{ template }}}}`, got {value!r}"
    )


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
