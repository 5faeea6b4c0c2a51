"""Models of the legacy ``hptuning`` (``settings``) section: the matrix entries with their
space forms, the search algorithms and early stopping."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    field_validator,
    model_validator,
)

from polyaxon_prefect.legacy._spec import LegacySpec

__all__ = [
    "DISCRETE_KEYS",
    "DISTRIBUTION_KEYS",
    "MATRIX_KEYS",
    "RANGE_KEYS",
    "SPACE_KEYS",
    "EarlyStopping",
    "HPTuning",
    "Logging",
    "MatrixEntry",
    "Settings",
    "space_items",
]

# Matrix entry keys, with the value keys their dict/list/string forms zip into.
SPACE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (required keys, optional keys)
    "range": (("start", "stop", "step"), ()),
    "linspace": (("start", "stop", "num"), ()),
    "logspace": (("start", "stop", "num"), ("base",)),
    "geomspace": (("start", "stop", "num"), ()),
    "uniform": (("low", "high"), ("size",)),
    "quniform": (("low", "high", "q"), ("size",)),
    "loguniform": (("low", "high"), ("size",)),
    "qloguniform": (("low", "high", "q"), ("size",)),
    "normal": (("loc", "scale"), ("size",)),
    "qnormal": (("loc", "scale", "q"), ("size",)),
    "lognormal": (("loc", "scale"), ("size",)),
    "qlognormal": (("loc", "scale", "q"), ("size",)),
}
RANGE_KEYS = ("range", "linspace", "logspace", "geomspace")
DISCRETE_KEYS = ("values", *RANGE_KEYS)
DISTRIBUTION_KEYS = ("pvalues", *(k for k in SPACE_KEYS if k not in RANGE_KEYS))
MATRIX_KEYS = (*DISCRETE_KEYS, *DISTRIBUTION_KEYS)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _to_number(value: Any) -> int | float:
    if _is_number(value):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            return float(text)  # raises ValueError for non-numbers
    raise ValueError(f"expected a number, got {value!r}")


def space_items(kind: str, value: object) -> dict[str, int | float]:
    """The named numbers of a ``range``/``uniform``/... value written as string, list or dict.

    Legacy accepted ``'1:10:2'``, ``[1, 10, 2]`` and ``{start: 1, stop: 10, step: 2}``; all three
    zip into the keys of ``SPACE_KEYS[kind]``. Raises ``ValueError`` with the accepted forms.
    """
    required, optional = SPACE_KEYS[kind]
    keys = required + optional
    forms = f"`{':'.join(required)}`, [{', '.join(required)}] or {{{', '.join(required)}}}"
    if isinstance(value, str):
        parts: list[Any] = value.split(":")
        named = None
    elif isinstance(value, list):
        parts = list(value)
        named = None
    elif isinstance(value, dict):
        missing = [k for k in required if k not in value]
        unknown = [k for k in value if k not in keys]
        if missing or unknown:
            raise ValueError(
                f"`{kind}` as a mapping needs the keys {', '.join(required)}"
                + (f" (optional: {', '.join(optional)})" if optional else "")
                + f"; got {', '.join(map(str, value)) or 'none'}"
            )
        named = value
        parts = [value[k] for k in keys if k in value]
    else:
        raise ValueError(f"`{kind}` expects {forms}, got {value!r}")
    if named is None and len(parts) not in (len(required), len(keys)):
        expected = str(len(required)) if not optional else f"{len(required)} or {len(keys)}"
        raise ValueError(
            f"`{kind}` expects {expected} numbers ({forms}), got {len(parts)}: {value!r}"
        )
    names = [k for k in keys if k in named] if named is not None else keys[: len(parts)]
    out: dict[str, int | float] = {}
    for name, part in zip(names, parts, strict=True):
        try:
            out[name] = _to_number(part)
        except ValueError:
            raise ValueError(f"`{kind}`: `{name}` must be a number, got {part!r}") from None
    if kind in RANGE_KEYS:
        if out[required[0]] >= out[required[1]]:
            raise ValueError(
                f"`{kind}`: `{required[1]}` must be greater than `{required[0]}`, "
                f"got {required[0]}={out[required[0]]} and {required[1]}={out[required[1]]}"
            )
        if out[required[2]] == 0:
            raise ValueError(f"`{kind}`: `{required[2]}` cannot be 0")
    return out


def _loose_range(value: object) -> bool:
    """A ``range`` written as a plain list of 4+ numbers: legacy rejected it, but the intent
    (an explicit list of values) is unambiguous, so the converter reads it as ``values``."""
    return isinstance(value, list) and len(value) >= 4 and all(_is_number(v) for v in value)


class MatrixEntry(LegacySpec):
    """One hyper-parameter of ``hptuning.matrix``: exactly one of the value keys."""

    values: list[Any] | None = None
    pvalues: list[list[Any]] | None = None
    range: Any = None
    linspace: Any = None
    logspace: Any = None
    geomspace: Any = None
    uniform: Any = None
    quniform: Any = None
    loguniform: Any = None
    qloguniform: Any = None
    normal: Any = None
    qnormal: Any = None
    lognormal: Any = None
    qlognormal: Any = None

    @field_validator("values")
    @classmethod
    def _check_values(cls, value: list[Any] | None) -> list[Any] | None:
        if value is not None and not value:
            raise ValueError("`values` must list at least one value, got an empty list")
        return value

    @field_validator("pvalues")
    @classmethod
    def _check_pvalues(cls, value: list[list[Any]] | None) -> list[list[Any]] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("`pvalues` must list at least one [value, probability] pair")
        total = 0.0
        for item in value:
            if len(item) != 2 or not isinstance(item[1], float) or not 0 <= item[1] < 1:
                raise ValueError(
                    "each `pvalues` item must be [value, probability] with a float "
                    f"probability in [0, 1), got {item!r}"
                )
            total += item[1]
        if total > 1 + 1e-9:
            raise ValueError(f"`pvalues` probabilities must sum to at most 1, got {total:g}")
        return value

    @field_validator(*SPACE_KEYS)
    @classmethod
    def _check_space(cls, value: Any, info: Any) -> Any:
        if value is None:
            return value
        if info.field_name == "range" and _loose_range(value):
            return value
        space_items(info.field_name, value)
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> MatrixEntry:
        used = [key for key in MATRIX_KEYS if getattr(self, key) is not None]
        if len(used) != 1:
            got = ", ".join(used) if used else "none"
            raise ValueError(
                f"a matrix entry needs exactly one of {', '.join(MATRIX_KEYS)}; got {got}"
            )
        return self

    @property
    def key(self) -> str:
        return next(key for key in MATRIX_KEYS if getattr(self, key) is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.key)


# --- environment -------------------------------------------------------------------------


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


Optimization = Annotated[Literal["maximize", "minimize"], BeforeValidator(_lower)]


class SearchMetric(LegacySpec):
    name: str
    optimization: Optimization = "maximize"


class NumExperiments(LegacySpec):
    n_experiments: int | None = Field(default=None, ge=1)


class HyperbandResource(LegacySpec):
    name: str
    type: Annotated[Literal["int", "float"], BeforeValidator(_lower)] = "float"


class Hyperband(LegacySpec):
    max_iter: int = Field(ge=1)
    eta: float = Field(ge=0)
    resource: HyperbandResource
    metric: SearchMetric
    resume: bool | None = None


class GaussianProcess(LegacySpec):
    kernel: Annotated[Literal["rbf", "matern"], BeforeValidator(_lower)] | None = None
    length_scale: float | None = None
    nu: float | None = None
    n_restarts_optimizer: int | None = Field(default=None, ge=0)


class UtilityFunction(LegacySpec):
    acquisition_function: Annotated[Literal["ucb", "ei", "poi"], BeforeValidator(_lower)] | None = (
        None
    )
    gaussian_process: GaussianProcess | None = None
    kappa: float | None = None
    eps: float | None = None
    n_warmup: int | None = Field(default=None, ge=1)
    n_iter: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _needs(self) -> UtilityFunction:
        function = self.acquisition_function or "ucb"
        if function == "ucb" and self.kappa is None:
            raise ValueError("the acquisition function `ucb` requires `kappa`")
        if function in ("ei", "poi") and self.eps is None:
            raise ValueError(f"the acquisition function `{function}` requires `eps`")
        return self


class BayesOpt(LegacySpec):
    n_initial_trials: int = Field(ge=1)
    n_iterations: int = Field(ge=1)
    metric: SearchMetric
    utility_function: UtilityFunction | None = None


class MedianPolicy(LegacySpec):
    kind: Literal["median"]
    evaluation_interval: int = Field(ge=1)


class AveragePolicy(LegacySpec):
    kind: Literal["average"]
    evaluation_interval: int = Field(ge=1)


class TruncationPolicy(LegacySpec):
    kind: Literal["truncation"]
    percent: float = Field(gt=0, lt=100)
    evaluation_interval: int = Field(ge=1)


StoppingPolicy = Annotated[
    MedianPolicy | AveragePolicy | TruncationPolicy, Field(discriminator="kind")
]


class EarlyStopping(LegacySpec):
    metric: str
    value: float | None = None
    optimization: Optimization = "maximize"
    policy: StoppingPolicy | None = None


class HPTuning(LegacySpec):
    seed: int | None = None
    concurrency: int | None = Field(default=None, ge=1)
    matrix: dict[str, MatrixEntry] | None = None
    grid_search: NumExperiments | None = None
    random_search: NumExperiments | None = None
    hyperband: Hyperband | None = None
    bo: BayesOpt | None = None
    early_stopping: list[EarlyStopping] | None = None


class Logging(LegacySpec):
    level: str | None = None
    formatter: str | None = None


class Settings(HPTuning):
    """The 0.1-0.2 name of ``hptuning`` (it also carried ``logging``)."""

    logging: Logging | None = None
