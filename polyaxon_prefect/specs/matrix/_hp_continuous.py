"""The continuous hyper-parameter kinds: the uniform and normal families, plain, quantised
(``q``) and in log space."""

from typing import Any, ClassVar, Literal

from polyaxon_prefect.specs.matrix._hp_base import (
    DistSpec,
    NormalSpec,
    _fields,
    _HpParam,
    _integer,
    _number,
    _ordered,
    _positive,
)

__all__ = [
    "HpLogNormal",
    "HpLogUniform",
    "HpNormal",
    "HpQLogNormal",
    "HpQLogUniform",
    "HpQNormal",
    "HpQUniform",
    "HpUniform",
]


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
    def _parse(cls, value: object) -> DistSpec:
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
    def _parse(cls, value: object) -> NormalSpec:
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
