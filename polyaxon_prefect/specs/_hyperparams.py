"""The 16 hyper-parameter kinds of a matrix (``choice``, ``range``, ``uniform``, ...).

Each model keeps the user's ``value`` exactly as written (a list, a mapping, an ``"a:b:c"`` string
or a ``{{ template }}``) so a spec dumps back to what was read, and exposes ``spec``: one small
frozen dataclass with the named, typed numbers, so the search code never re-parses value syntax.

Semantics follow Polyaxon's samplers, including their surprises (spec 7 and 13): ``range`` excludes
``stop``; ``logspace`` start/stop are exponents; ``loguniform`` bounds are natural logs. Where
Polyaxon silently accepts a value that cannot mean what the user wrote (``pchoice`` weights that do
not sum to 1, an empty range, ``q <= 0``) we refuse it and say why.

The discrete kinds are here; the shared views, parsing helpers and base model are in
`_hp_base`, the continuous kinds in `_hp_continuous`. `HpParam` is the union of all sixteen.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from polyaxon_prefect.specs._base import Ref
from polyaxon_prefect.specs._hp_base import (
    _DATE,
    _DATETIME,
    _PCHOICE_TOLERANCE,
    _TIMEDELTA,
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
from polyaxon_prefect.specs._hp_continuous import (
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
