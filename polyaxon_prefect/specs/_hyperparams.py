"""The 16 hyper-parameter kinds of a matrix (``choice``, ``range``, ``uniform``, ...).

Each model keeps the user's ``value`` exactly as written (a list, a mapping, an ``"a:b:c"`` string
or a ``{{ template }}``) so a spec dumps back to what was read, and exposes ``spec``: one small
frozen dataclass with the named, typed numbers, so the search code never re-parses value syntax.

Semantics follow Polyaxon's samplers, including their surprises (spec 7 and 13): ``range`` excludes
``stop``; ``logspace`` start/stop are exponents; ``loguniform`` bounds are natural logs. Where
Polyaxon silently accepts a value that cannot mean what the user wrote (``pchoice`` weights that do
not sum to 1, an empty range, ``q <= 0``) we refuse it and say why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from numbers import Integral, Real
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, Ref, is_template

__all__ = [
    "ChoiceSpec",
    "DistSpec",
    "HpChoice",
    "HpDateRange",
    "HpDateTimeRange",
    "HpGeomSpace",
    "HpLinSpace",
    "HpLogNormal",
    "HpLogSpace",
    "HpLogUniform",
    "HpNormal",
    "HpPChoice",
    "HpParam",
    "HpQLogNormal",
    "HpQLogUniform",
    "HpQNormal",
    "HpQUniform",
    "HpRange",
    "HpUniform",
    "NormalSpec",
    "PChoiceSpec",
    "RangeSpec",
    "SpaceSpec",
]

Number = int | float
_PCHOICE_TOLERANCE = 1e-9


# ---------------------------------------------------------------------------------------------
# Normalised views


@dataclass(frozen=True)
class ChoiceSpec:
    """The values of a ``choice``, in the order written."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class PChoiceSpec:
    """The values of a ``pchoice`` and their probabilities (same order, summing to 1)."""

    values: tuple[Any, ...]
    probabilities: tuple[float, ...]


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
    value: Any,
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


def _number(kind: str, key: str, raw: Any) -> Number:
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


def _integer(kind: str, key: str, raw: Any, *, hint: str | None = None) -> int:
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


def _positive(kind: str, key: str, raw: Any) -> Number:
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


_DATE = TypeAdapter(date)
_DATETIME = TypeAdapter(datetime)
_TIMEDELTA = TypeAdapter(timedelta)


def _parse_as(adapter: TypeAdapter[Any], kind: str, key: str, raw: Any, what: str) -> Any:
    try:
        return adapter.validate_python(raw)
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
    def _check_value(cls, value: Any) -> Any:
        if is_template(value):
            return value
        cls._parse(value)
        return list(value) if isinstance(value, tuple) else value

    @classmethod
    def _parse(cls, value: Any) -> Any:  # pragma: no cover - every kind overrides it
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

    @property
    def length(self) -> int | None:
        """How many values a discrete kind has; None for a distribution or a template."""
        if not self.DISCRETE or self.is_ref:
            return None
        return len(self.to_values())

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


# ---------------------------------------------------------------------------------------------
# Discrete kinds


class HpChoice(_HpParam):
    """One of a list of values (any types)."""

    IO_TYPES: ClassVar[frozenset[str] | None] = None

    kind: Literal["choice"] = "choice"
    value: list[Any] | Ref

    @classmethod
    def _parse(cls, value: Any) -> ChoiceSpec:
        if not isinstance(value, list | tuple):
            raise _fail("hp_value_shape", f"`choice` expects a list of values, got {value!r}")
        if not value:
            raise _fail("hp_empty", "`choice` needs at least one value, got an empty list")
        return ChoiceSpec(tuple(value))

    @property
    def is_categorical(self) -> bool:
        """Some value is not a number (Polyaxon counts bools as numbers)."""
        if self.is_ref:
            return False
        return any(not isinstance(v, int | float | complex) for v in self.value)

    def _enumerate(self, spec: ChoiceSpec) -> list[Any]:
        return list(spec.values)


class HpPChoice(_HpParam):
    """One of a list of ``[value, probability]`` pairs, drawn with those probabilities."""

    DISTRIBUTION: ClassVar[bool] = True
    IO_TYPES: ClassVar[frozenset[str] | None] = None

    kind: Literal["pchoice"] = "pchoice"
    value: list[Any] | Ref

    @classmethod
    def _parse(cls, value: Any) -> PChoiceSpec:
        if not isinstance(value, list | tuple):
            raise _fail(
                "hp_value_shape",
                f"`pchoice` expects a list of [value, probability] pairs, got {value!r}",
            )
        if not value:
            raise _fail("hp_empty", "`pchoice` needs at least one value, got an empty list")
        values: list[Any] = []
        probabilities: list[float] = []
        for index, item in enumerate(value):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise _fail(
                    "hp_value_shape",
                    f"`pchoice` item {index} must be a [value, probability] pair, got {item!r}",
                )
            choice, probability = item
            if not isinstance(probability, float) or not 0 <= probability < 1:
                raise _fail(
                    "hp_pchoice_probability",
                    f"`pchoice` probability of {choice!r} must be a float in [0, 1), "
                    f"got {probability!r}",
                    "write probabilities as decimals such as 0.25; a value that is certain "
                    "is a `choice` with one value",
                )
            values.append(choice)
            probabilities.append(probability)
        total = math.fsum(probabilities)
        if abs(total - 1) > _PCHOICE_TOLERANCE:
            terms = " + ".join(repr(p) for p in probabilities)
            if total < 1:
                hint = (
                    "make the probabilities sum to 1 (Polyaxon would silently give the "
                    f"missing {1 - total:.6g} to the last value, {values[-1]!r})"
                )
            else:
                hint = "make the probabilities sum to 1"
            raise _fail(
                "hp_pchoice_sum",
                f"`pchoice` probabilities must sum to 1, got {total:.6g} ({terms})",
                hint,
            )
        return PChoiceSpec(tuple(values), tuple(probabilities))

    def _enumerate(self, spec: PChoiceSpec) -> list[Any]:
        return list(spec.values)


class HpRange(_HpParam):
    """``np.arange(start, stop, step)``: ``stop`` excluded; ints stay ints."""

    RANGE: ClassVar[bool] = True

    kind: Literal["range"] = "range"
    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: Any) -> RangeSpec:
        raw = _fields("range", value, ("start", "stop", "step"))
        start = _number("range", "start", raw["start"])
        stop = _number("range", "stop", raw["stop"])
        step = _number("range", "step", raw["step"])
        if step == 0:
            raise _fail("hp_range_step", "`range` step must not be 0, got 0")
        _ordered("range", "start", "stop", start, stop)
        if step < 0:
            raise _fail(
                "hp_range_empty",
                f"`range` from {start} to {stop} with step {step} is empty: "
                "a negative step never reaches a larger stop",
                "use a positive step",
            )
        return RangeSpec(start, stop, step)

    def _enumerate(self, spec: RangeSpec) -> list[Any]:
        import numpy as np

        return np.arange(spec.start, spec.stop, spec.step).tolist()


class _Space(_HpParam):
    RANGE: ClassVar[bool] = True
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: Any) -> SpaceSpec:
        kind = cls.model_fields["kind"].default
        raw = _fields(kind, value, ("start", "stop", "num"), cls.OPTIONAL)
        start = _number(kind, "start", raw["start"])
        stop = _number(kind, "stop", raw["stop"])
        num = _integer(kind, "num", raw["num"], hint="num is how many values to generate")
        _ordered(kind, "start", "stop", start, stop)
        base = None
        if raw.get("base") is not None:
            base = _positive(kind, "base", raw["base"])
        cls._check(start, stop)
        return SpaceSpec(start, stop, num, base)

    @classmethod
    def _check(cls, start: Number, stop: Number) -> None:
        return None


class HpLinSpace(_Space):
    """``np.linspace(start, stop, num)``: ``num`` evenly spaced values, both ends included."""

    kind: Literal["linspace"] = "linspace"

    def _enumerate(self, spec: SpaceSpec) -> list[Any]:
        import numpy as np

        return np.linspace(spec.start, spec.stop, spec.num).tolist()


class HpLogSpace(_Space):
    """``np.logspace(start, stop, num, base)``: start and stop are EXPONENTS of ``base``."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("base",)

    kind: Literal["logspace"] = "logspace"

    def _enumerate(self, spec: SpaceSpec) -> list[Any]:
        import numpy as np

        base = 10.0 if spec.base is None else spec.base
        return np.logspace(spec.start, spec.stop, spec.num, base=base).tolist()


class HpGeomSpace(_Space):
    """``np.geomspace(start, stop, num)``: a geometric progression between the actual values."""

    kind: Literal["geomspace"] = "geomspace"

    @classmethod
    def _check(cls, start: Number, stop: Number) -> None:
        if start == 0 or stop == 0 or (start < 0) != (stop < 0):
            raise _fail(
                "hp_geomspace_sign",
                f"`geomspace` start and stop must be non-zero with the same sign, "
                f"got start {start} and stop {stop}",
            )

    def _enumerate(self, spec: SpaceSpec) -> list[Any]:
        import numpy as np

        return np.geomspace(spec.start, spec.stop, spec.num).tolist()


class HpDateRange(_HpParam):
    """Dates from ``start`` (included) to ``stop`` (excluded), every ``step`` days."""

    RANGE: ClassVar[bool] = True
    IO_TYPES: ClassVar[frozenset[str] | None] = frozenset({"date"})

    kind: Literal["daterange"] = "daterange"
    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: Any) -> RangeSpec:
        raw = _fields("daterange", value, ("start", "stop", "step"), allow_str=False)
        start = _parse_as(_DATE, "daterange", "start", raw["start"], "date (YYYY-MM-DD)")
        stop = _parse_as(_DATE, "daterange", "stop", raw["stop"], "date (YYYY-MM-DD)")
        step = _integer("daterange", "step", raw["step"], hint="the step is a number of days")
        _ordered("daterange", "start", "stop", start, stop)
        return RangeSpec(start, stop, step)

    def _enumerate(self, spec: RangeSpec) -> list[Any]:
        count = -(-(spec.stop - spec.start).days // spec.step)
        return [spec.start + timedelta(days=spec.step * i) for i in range(count)]


class HpDateTimeRange(_HpParam):
    """Datetimes from ``start`` (included) to ``stop`` (excluded), every ``step`` seconds."""

    RANGE: ClassVar[bool] = True
    IO_TYPES: ClassVar[frozenset[str] | None] = frozenset({"datetime"})

    kind: Literal["datetimerange"] = "datetimerange"
    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: Any) -> RangeSpec:
        kind = "datetimerange"
        raw = _fields(kind, value, ("start", "stop", "step"), allow_str=False)
        what = "datetime (YYYY-MM-DD HH:MM[:SS][+TZ])"
        start = _parse_as(_DATETIME, kind, "start", raw["start"], what)
        stop = _parse_as(_DATETIME, kind, "stop", raw["stop"], what)
        step_raw = raw["step"]
        if isinstance(step_raw, bool):
            step_raw = None
        step = _parse_as(_TIMEDELTA, kind, "step", step_raw, "number of seconds")
        if step <= timedelta(0):
            raise _fail("hp_positive", f"`{kind}` step must be > 0 seconds, got {raw['step']!r}")
        if (start.tzinfo is None) != (stop.tzinfo is None):
            raise _fail(
                "hp_date",
                f"`{kind}` start and stop must both have a timezone or both have none, "
                f"got {start.isoformat()} and {stop.isoformat()}",
            )
        _ordered(kind, "start", "stop", start, stop)
        return RangeSpec(start, stop, step)

    def _enumerate(self, spec: RangeSpec) -> list[Any]:
        count = math.ceil((spec.stop - spec.start) / spec.step)
        return [spec.start + spec.step * i for i in range(count)]


# ---------------------------------------------------------------------------------------------
# Continuous kinds


class _Continuous(_HpParam):
    DISCRETE: ClassVar[bool] = False
    DISTRIBUTION: ClassVar[bool] = True
    QUANTISED: ClassVar[bool] = False

    value: list[Any] | dict[str, Any] | str


def _size(kind: str, raw: dict[str, Any], quantised: bool) -> int | None:
    if raw.get("size") is None:
        return None
    hint = None
    if not quantised and not isinstance(raw["size"], int):
        hint = f"a third value is the sample size; for a step use `q{kind}`"
    return _integer(kind, "size", raw["size"], hint=hint)


class _UniformFamily(_Continuous):
    @classmethod
    def _parse(cls, value: Any) -> DistSpec:
        kind = cls.model_fields["kind"].default
        required = ("low", "high", "q") if cls.QUANTISED else ("low", "high")
        raw = _fields(kind, value, required, ("size",))
        low = _number(kind, "low", raw["low"])
        high = _number(kind, "high", raw["high"])
        _ordered(kind, "low", "high", low, high)
        q = _positive(kind, "q", raw["q"]) if cls.QUANTISED else None
        return DistSpec(low, high, q, _size(kind, raw, cls.QUANTISED))


class HpUniform(_UniformFamily):
    """``uniform(low, high)``."""

    kind: Literal["uniform"] = "uniform"

    @property
    def is_uniform(self) -> bool:
        return True


class HpQUniform(_UniformFamily):
    """``floor(uniform(low, high) / q) * q`` (Polyaxon floors; it does not round)."""

    QUANTISED: ClassVar[bool] = True

    kind: Literal["quniform"] = "quniform"


class HpLogUniform(_UniformFamily):
    """``exp(uniform(low, high))``: low and high are natural-log bounds."""

    kind: Literal["loguniform"] = "loguniform"


class HpQLogUniform(_UniformFamily):
    """``floor(exp(uniform(low, high)) / q) * q``."""

    QUANTISED: ClassVar[bool] = True

    kind: Literal["qloguniform"] = "qloguniform"


class _NormalFamily(_Continuous):
    @classmethod
    def _parse(cls, value: Any) -> NormalSpec:
        kind = cls.model_fields["kind"].default
        required = ("loc", "scale", "q") if cls.QUANTISED else ("loc", "scale")
        raw = _fields(kind, value, required, ("size",))
        loc = _number(kind, "loc", raw["loc"])
        scale = _positive(kind, "scale", raw["scale"])
        q = _positive(kind, "q", raw["q"]) if cls.QUANTISED else None
        return NormalSpec(loc, scale, q, _size(kind, raw, cls.QUANTISED))


class HpNormal(_NormalFamily):
    """``normal(loc, scale)``."""

    kind: Literal["normal"] = "normal"


class HpQNormal(_NormalFamily):
    """``floor(normal(loc, scale) / q) * q``."""

    QUANTISED: ClassVar[bool] = True

    kind: Literal["qnormal"] = "qnormal"


class HpLogNormal(_NormalFamily):
    """``lognormal(mean=loc, sigma=scale)``."""

    kind: Literal["lognormal"] = "lognormal"


class HpQLogNormal(_NormalFamily):
    """``floor(lognormal(loc, scale) / q) * q``."""

    QUANTISED: ClassVar[bool] = True

    kind: Literal["qlognormal"] = "qlognormal"


HpParam = Annotated[
    HpChoice
    | HpPChoice
    | HpRange
    | HpLinSpace
    | HpLogSpace
    | HpGeomSpace
    | HpDateRange
    | HpDateTimeRange
    | HpUniform
    | HpQUniform
    | HpLogUniform
    | HpQLogUniform
    | HpNormal
    | HpQNormal
    | HpLogNormal
    | HpQLogNormal,
    Field(discriminator="kind"),
]
"""Any hyper-parameter kind, chosen by its ``kind``."""
