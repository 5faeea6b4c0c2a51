"""What every hyper-parameter kind shares: the normalised value views (``spec``), the parsing
helpers that turn a written value into them with pointed errors, and the base model."""

import functools
import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from numbers import Integral, Real
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, is_template

__all__ = [
    "PCHOICE_TOLERANCE",
    "ChoiceSpec",
    "DistSpec",
    "NormalSpec",
    "Number",
    "PChoiceSpec",
    "RangeSpec",
    "SpaceSpec",
]

Number = int | float
PCHOICE_TOLERANCE = 1e-9
"""How far from 1 a `pchoice` sum may be and still count as 1 (binary float rounding)."""


# ---------------------------------------------------------------------------------------------
# Normalised views


@dataclass(frozen=True)
class ChoiceSpec:
    """The values of a ``choice``, in the order written."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class PChoiceSpec:
    """The values of a ``pchoice`` and the probabilities they are drawn with (same order,
    summing to 1: where the file's sum to less, the last value takes the rest, as in Polyaxon);
    ``written_sum`` is the sum the file wrote."""

    values: tuple[Any, ...]
    probabilities: tuple[float, ...]
    written_sum: float = 1.0


@dataclass(frozen=True)
class RangeSpec:
    """``range`` (numbers), ``daterange`` (dates, step in days as an int) or ``datetimerange``
    (datetimes, step as a timedelta). ``stop`` is exclusive."""

    start: Any
    stop: Any
    step: Any


@dataclass(frozen=True)
class SpaceSpec:
    """``linspace``/``logspace``/``geomspace``: ``num`` points from ``start`` to ``stop``
    inclusive; for ``logspace`` start/stop are exponents of ``base`` (None means 10)."""

    start: Number
    stop: Number
    num: int
    base: Number | None = None


@dataclass(frozen=True)
class DistSpec:
    """``uniform``-family bounds; ``q`` for the quantised kinds, ``size`` if given."""

    low: Number
    high: Number
    q: Number | None = None
    size: int | None = None


@dataclass(frozen=True)
class NormalSpec:
    """``normal``-family location and scale; ``q`` for the quantised kinds, ``size`` if given."""

    loc: Number
    scale: Number
    q: Number | None = None
    size: int | None = None


# ---------------------------------------------------------------------------------------------
# Value parsing helpers


def _fail(rule: str, message: str, hint: str | None = None) -> PydanticCustomError:
    return PydanticCustomError(rule, message, {"hint": hint} if hint else None)


def _fields(
    kind: str,
    value: object,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    *,
    allow_str: bool = True,
) -> dict[str, Any]:
    """Read list, mapping or ``a:b:c`` string syntax into a ``{key: raw}`` dict."""
    keys = required + optional
    shape = ", ".join(required) + "".join(f"[, {key}]" for key in optional)
    forms = f"[{shape}] or {{{', '.join(keys)}}}"
    if allow_str:
        forms += f" or '{':'.join(required)}'"
    if isinstance(value, dict):
        unknown = [key for key in value if key not in keys]
        if unknown:
            raise _fail(
                "hp_unknown_key",
                f"`{kind}` does not take the key(s) {', '.join(map(str, unknown))}; "
                f"it takes {', '.join(keys)}",
            )
        missing = [key for key in required if key not in value]
        if missing:
            raise _fail(
                "hp_missing_key",
                f"`{kind}` needs {', '.join(missing)}, got {value!r}; write {forms}",
            )
        return dict(value)
    if isinstance(value, str):
        if not allow_str:
            raise _fail(
                "hp_value_shape",
                f"`{kind}` has no 'a:b:c' string form, got {value!r}",
                f"write {forms}",
            )
        items: list[Any] = [part.strip() for part in value.split(":")]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise _fail("hp_value_shape", f"`{kind}` expects {forms}, got {value!r}")
    if not len(required) <= len(items) <= len(keys):
        count = str(len(required)) if not optional else f"{len(required)} to {len(keys)}"
        raise _fail(
            "hp_value_shape",
            f"`{kind}` expects {count} values ({shape}), got {len(items)}: {value!r}",
        )
    return dict(zip(keys, items, strict=False))


def _number(kind: str, key: str, raw: object) -> Number:
    """An int stays an int (so ``range 10:600:50`` gives ints), anything else a finite float."""
    result: Number | None = None
    if isinstance(raw, bool):
        result = None
    elif isinstance(raw, Integral):
        result = int(raw)
    elif isinstance(raw, Real):
        result = float(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            result = int(text)
        except ValueError:
            try:
                result = float(text)
            except ValueError:
                result = None
    if result is None or not math.isfinite(result):
        raise _fail("hp_number", f"`{kind}` {key} must be a number, got {raw!r}")
    return result


def _integer(kind: str, key: str, raw: object, *, hint: str | None = None) -> int:
    number: Any = raw
    if not isinstance(raw, bool):
        try:
            number = _number(kind, key, raw)
        except PydanticCustomError:
            number = raw
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise _fail("hp_integer", f"`{kind}` {key} must be an integer >= 1, got {raw!r}", hint)
    return number


def _positive(kind: str, key: str, raw: object) -> Number:
    number = _number(kind, key, raw)
    if number <= 0:
        raise _fail("hp_positive", f"`{kind}` {key} must be > 0, got {raw!r}")
    return number


def _ordered(kind: str, low_key: str, high_key: str, low: Any, high: Any) -> None:
    if not low < high:
        raise _fail(
            "hp_order",
            f"`{kind}` {high_key} must be greater than {low_key}, "
            f"got {low_key} {low} and {high_key} {high}",
            f"swap {low_key} and {high_key}" if high < low else None,
        )


_DATE, _DATETIME, _TIMEDELTA = date, datetime, timedelta


@functools.cache
def _adapter(target: type) -> TypeAdapter[Any]:
    """Built on first use: three adapters cost tens of milliseconds of every `check`'s import,
    while only a date-range hyperparameter needs one."""
    return TypeAdapter(target)


def _parse_as(target: type, kind: str, key: str, raw: object, what: str) -> Any:
    try:
        return _adapter(target).validate_python(raw)
    except ValidationError:
        raise _fail("hp_date", f"`{kind}` {key} must be a {what}, got {raw!r}") from None


# ---------------------------------------------------------------------------------------------
# Base class


_NUMERIC_IO = frozenset({"int", "float"})


class _HpParam(BaseSpec):
    """Shared behaviour; each kind sets the class flags and ``_parse``."""

    DISCRETE: ClassVar[bool] = True
    DISTRIBUTION: ClassVar[bool] = False
    RANGE: ClassVar[bool] = False
    IO_TYPES: ClassVar[frozenset[str] | None] = _NUMERIC_IO
    """IO types a value of this kind can feed; None means any (Polyaxon's ``validate_io``)."""

    kind: str
    value: Any

    @field_validator("value", mode="before")
    @classmethod
    def _check_value(cls, value: object) -> object:
        if is_template(value):
            return value
        cls._parse(value)
        return list(value) if isinstance(value, tuple) else value

    @classmethod
    def _parse(cls, value: object) -> Any:  # pragma: no cover - every kind overrides it
        raise NotImplementedError

    @property
    def is_ref(self) -> bool:
        """The value is a ``{{ template }}``, only known once params are resolved."""
        return is_template(self.value)

    @property
    def spec(self) -> Any:
        """The typed view of ``value`` (a ``*Spec`` dataclass), or None for a template."""
        return None if self.is_ref else type(self)._parse(self.value)

    @property
    def is_discrete(self) -> bool:
        return self.DISCRETE

    @property
    def is_continuous(self) -> bool:
        return not self.DISCRETE

    @property
    def is_distribution(self) -> bool:
        """Sampled rather than enumerated: ``pchoice`` and every continuous kind."""
        return self.DISTRIBUTION

    @property
    def is_range(self) -> bool:
        return self.RANGE

    @property
    def is_categorical(self) -> bool:
        return False

    @property
    def is_uniform(self) -> bool:
        return False

    def to_values(self) -> list[Any]:
        """Every value of a discrete kind, in the order numpy (and Polyaxon) enumerates them."""
        if not self.DISCRETE:
            raise ValueError(
                f"`{self.kind}` is a continuous distribution: it has no finite list of values"
            )
        if self.is_ref:
            raise ValueError(
                f"`{self.kind}` value {self.value!r} is a template: render it before enumerating"
            )
        return self._enumerate(self.spec)

    def _enumerate(self, spec: Any) -> list[Any]:  # pragma: no cover - discrete kinds override
        raise NotImplementedError

    def _count(self, spec: Any) -> int:
        """How many values ``_enumerate`` gives; kinds that can count from their numbers
        (``range``, the ``*space`` kinds, the date ranges) override it, so a grid is sized
        without listing its values."""
        return len(self._enumerate(spec))

    def _value_at(self, spec: Any, index: int) -> Any:
        """The ``index``-th value of ``_enumerate``; the counted kinds compute it directly."""
        return self._enumerate(spec)[index]

    @property
    def length(self) -> int | None:
        """How many values a discrete kind has; None for a distribution or a template.

        Counted, not enumerated: ``range: 0:10000000:1`` costs nothing to size."""
        if not self.DISCRETE or self.is_ref:
            return None
        return self._count(self.spec)

    def value_at(self, index: int) -> Any:
        """``to_values()[index]`` without listing the values (a grid's point by its index).

        Raises:
            IndexError: ``index`` is outside ``0 <= index < length``.
            ValueError: a continuous kind or a template (as ``to_values``).
        """
        if not self.DISCRETE or self.is_ref:
            self.to_values()  # raises the same error as enumerating would
        spec = self.spec
        count = self._count(spec)
        if not 0 <= index < count:
            raise IndexError(f"`{self.kind}` has {count} values, no value at index {index}")
        return self._value_at(spec, index)

    def validate_io(self, io_type: str | None, name: str | None = None) -> str | None:
        """Why this param cannot feed an input of ``io_type``, or None if it can.

        An untyped input (``io_type`` None) accepts any value, as it does for plain params.
        """
        if self.IO_TYPES is None or io_type is None or io_type in self.IO_TYPES:
            return None
        who = f"param `{name}`" if name else "the param"
        wanted = " or ".join(f"`{t}`" for t in sorted(self.IO_TYPES))
        return (
            f"{who} is a `{self.kind}` hyperparameter, which gives {wanted} values, "
            f"but its input has type `{io_type}`"
        )
