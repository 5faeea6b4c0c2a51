"""The 16 hyper-parameter kinds of a matrix (``choice``, ``range``, ``uniform``, ...).

Each model keeps the user's ``value`` exactly as written (a list, a mapping, an ``"a:b:c"`` string
or a ``{{ template }}``) so a spec dumps back to what was read, and exposes ``spec``: one small
frozen dataclass with the named, typed numbers, so the search code never re-parses value syntax.

Semantics follow Polyaxon's samplers, including their surprises (spec 7 and 13): ``range`` excludes
``stop``; ``logspace`` start/stop are exponents; ``loguniform`` bounds are natural logs. Where
Polyaxon silently accepts a value that cannot mean what the user wrote (an empty range, ``q <= 0``)
we refuse it and say why; ``pchoice`` weights that sum to less than 1 are sampled as Polyaxon does
(the last value takes the rest), with a warning where the file is loaded.

The discrete kinds are here; the shared views, parsing helpers and base model are in
`_hp_base`, the continuous kinds in `_hp_continuous`. `HpParam` is the union of all sixteen.
"""

import math
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from polyaxon_prefect.specs._base import Ref
from polyaxon_prefect.specs.matrix._hp_base import (
    _DATE,
    _DATETIME,
    _TIMEDELTA,
    PCHOICE_TOLERANCE,
    ChoiceSpec,
    DistSpec,
    NormalSpec,
    Number,
    PChoiceSpec,
    RangeSpec,
    SpaceSpec,
    _fail,
    _fields,
    _HpParam,
    _integer,
    _number,
    _ordered,
    _parse_as,
    _positive,
)
from polyaxon_prefect.specs.matrix._hp_continuous import (
    HpLogNormal,
    HpLogUniform,
    HpNormal,
    HpQLogNormal,
    HpQLogUniform,
    HpQNormal,
    HpQUniform,
    HpUniform,
)

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

# ---------------------------------------------------------------------------------------------
# Discrete kinds


class HpChoice(_HpParam):
    """One of a list of values (any types)."""

    IO_TYPES: ClassVar[frozenset[str] | None] = None

    kind: Literal["choice"] = "choice"
    value: list[Any] | Ref

    @classmethod
    def _parse(cls, value: object) -> ChoiceSpec:
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
    def _parse(cls, value: object) -> PChoiceSpec:
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
        if total > 1 + PCHOICE_TOLERANCE:
            terms = " + ".join(repr(p) for p in probabilities)
            raise _fail(
                "hp_pchoice_sum",
                f"`pchoice` probabilities must sum to at most 1, got {total:.6g} ({terms})",
                "make the probabilities sum to 1",
            )
        written = total
        if total < 1 - PCHOICE_TOLERANCE:
            # Polyaxon draws with numpy's multinomial, which ignores the last probability and
            # gives it whatever the others leave: the missing mass goes to the last value
            # (`matrix_warnings` says so where the file is loaded)
            probabilities[-1] = round(1 - math.fsum(probabilities[:-1]), 12)
        return PChoiceSpec(tuple(values), tuple(probabilities), written)

    def _enumerate(self, spec: PChoiceSpec) -> list[Any]:
        return list(spec.values)


class HpRange(_HpParam):
    """``np.arange(start, stop, step)``: ``stop`` excluded; ints stay ints."""

    RANGE: ClassVar[bool] = True

    kind: Literal["range"] = "range"
    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: object) -> RangeSpec:
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

        return list(np.arange(spec.start, spec.stop, spec.step).tolist())

    def _count(self, spec: RangeSpec) -> int:
        """``len(np.arange(...))``: numpy's own ``ceil((stop - start) / step)``."""
        steps: int = math.ceil((spec.stop - spec.start) / spec.step)
        return max(0, steps)

    def _value_at(self, spec: RangeSpec, index: int) -> Any:
        """What ``np.arange`` puts at ``index``: ``start + i * step`` for ints; for floats numpy
        fills ``start + i * delta`` with ``delta = (start + step) - start``, so this does too."""
        start, step = spec.start, spec.step
        if all(isinstance(v, int) for v in (start, spec.stop, step)):
            return start + index * step
        first = float(start)
        if index == 0:
            return first
        second = float(start + step)
        return second if index == 1 else first + index * (second - first)


def _linspace_at(start: float, stop: float, num: int, index: int) -> float:
    """What ``np.linspace(start, stop, num)`` puts at ``index``, in numpy's own arithmetic:
    ``i * step + start`` (``(i / div) * delta + start`` when ``step`` underflows to 0), the
    last value ``stop`` itself."""
    start, stop = float(start), float(stop)
    div = num - 1
    if div <= 0:
        return start
    if index == div:
        return stop
    delta = stop - start
    step = delta / div
    if step == 0:
        return (index / div) * delta + start
    return index * step + start


class _Space(_HpParam):
    RANGE: ClassVar[bool] = True
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    value: list[Any] | dict[str, Any] | str

    @classmethod
    def _parse(cls, value: object) -> SpaceSpec:
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

    def _count(self, spec: SpaceSpec) -> int:
        return max(0, spec.num)


class HpLinSpace(_Space):
    """``np.linspace(start, stop, num)``: ``num`` evenly spaced values, both ends included."""

    kind: Literal["linspace"] = "linspace"

    def _enumerate(self, spec: SpaceSpec) -> list[Any]:
        import numpy as np

        return list(np.linspace(spec.start, spec.stop, spec.num).tolist())

    def _value_at(self, spec: SpaceSpec, index: int) -> Any:
        return _linspace_at(spec.start, spec.stop, spec.num, index)


class HpLogSpace(_Space):
    """``np.logspace(start, stop, num, base)``: start and stop are EXPONENTS of ``base``."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("base",)

    kind: Literal["logspace"] = "logspace"

    def _enumerate(self, spec: SpaceSpec) -> list[Any]:
        import numpy as np

        base = 10.0 if spec.base is None else spec.base
        return list(np.logspace(spec.start, spec.stop, spec.num, base=base).tolist())

    def _value_at(self, spec: SpaceSpec, index: int) -> Any:
        """``base ** linspace``: the exponent exactly as numpy's; the power is C's ``pow``,
        which numpy's vectorised one may differ from in the last bit."""
        base = 10.0 if spec.base is None else float(spec.base)
        return base ** _linspace_at(spec.start, spec.stop, spec.num, index)


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

        return list(np.geomspace(spec.start, spec.stop, spec.num).tolist())

    def _value_at(self, spec: SpaceSpec, index: int) -> Any:
        """numpy's steps: ``10 ** linspace(log10 |start|, log10 |stop|)`` with both ends set
        exactly, times the sign (within a last bit of numpy's vectorised ``log10``/``pow``)."""
        sign = -1.0 if spec.start < 0 else 1.0
        start, stop = abs(float(spec.start)), abs(float(spec.stop))
        if index == 0:
            value = start
        elif index == spec.num - 1:
            value = stop
        else:
            exponent = _linspace_at(math.log10(start), math.log10(stop), spec.num, index)
            value = 10.0**exponent
        return value * sign


class _TimeRange(_HpParam):
    """Points in time from ``start`` (included) to ``stop`` (excluded), every ``step``:
    counted and computed by index, so a long range costs nothing to size."""

    RANGE: ClassVar[bool] = True

    value: list[Any] | dict[str, Any] | str

    def _enumerate(self, spec: RangeSpec) -> list[Any]:
        return [self._value_at(spec, i) for i in range(self._count(spec))]


class HpDateRange(_TimeRange):
    """Dates from ``start`` (included) to ``stop`` (excluded), every ``step`` days."""

    IO_TYPES: ClassVar[frozenset[str] | None] = frozenset({"date"})

    kind: Literal["daterange"] = "daterange"

    @classmethod
    def _parse(cls, value: object) -> RangeSpec:
        raw = _fields("daterange", value, ("start", "stop", "step"), allow_str=False)
        start = _parse_as(_DATE, "daterange", "start", raw["start"], "date (YYYY-MM-DD)")
        stop = _parse_as(_DATE, "daterange", "stop", raw["stop"], "date (YYYY-MM-DD)")
        step = _integer("daterange", "step", raw["step"], hint="the step is a number of days")
        _ordered("daterange", "start", "stop", start, stop)
        return RangeSpec(start, stop, step)

    def _count(self, spec: RangeSpec) -> int:
        steps: int = -(-(spec.stop - spec.start).days // spec.step)
        return max(0, steps)

    def _value_at(self, spec: RangeSpec, index: int) -> Any:
        return spec.start + timedelta(days=spec.step * index)


class HpDateTimeRange(_TimeRange):
    """Datetimes from ``start`` (included) to ``stop`` (excluded), every ``step`` seconds."""

    IO_TYPES: ClassVar[frozenset[str] | None] = frozenset({"datetime"})

    kind: Literal["datetimerange"] = "datetimerange"

    @classmethod
    def _parse(cls, value: object) -> RangeSpec:
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

    def _count(self, spec: RangeSpec) -> int:
        steps: int = math.ceil((spec.stop - spec.start) / spec.step)
        return max(0, steps)

    def _value_at(self, spec: RangeSpec, index: int) -> Any:
        return spec.start + spec.step * index


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
