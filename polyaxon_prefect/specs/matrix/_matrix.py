"""The seven matrix kinds of an operation: how to fan one component out over many params.

``grid`` and ``mapping`` are fully known up front; ``random`` samples; ``hyperband``, ``bayes``,
``hyperopt`` and ``iterative`` iterate on the results of earlier runs. Rules that Polyaxon only
discovers at run time (hyperopt without ``algorithm``/``numRuns``, a bayes ``pchoice``, a grid over
a distribution) are checked here, so ``check`` reports them before anything runs.
"""

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import Field, StrictStr, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from polyaxon_prefect._source import SectionKind
from polyaxon_prefect.specs._base import BaseSpec, Ref, is_template, split_csv
from polyaxon_prefect.specs._or_ref import (
    BoolOrRef,
    FloatOrRef,
    IntOrRef,
    PositiveIntOrRef,
)
from polyaxon_prefect.specs.matrix._early_stopping import (
    EarlyStopping,
    MetricEarlyStopping,
    OptimizationMetric,
    OptimizationResource,
)
from polyaxon_prefect.specs.matrix._hyperparams import HpParam

__all__ = [
    "MATRIX_KINDS",
    "MATRIX_MODELS",
    "MATRIX_SECTION_KINDS",
    "MAX_GRID_DEFAULT",
    "MAX_GRID_ENV",
    "Bayes",
    "GaussianProcess",
    "GridSearch",
    "Hyperband",
    "Hyperopt",
    "Iterative",
    "Mapping",
    "Matrix",
    "RandomSearch",
    "Tuner",
    "UtilityFunction",
    "max_grid",
]

MAX_GRID_ENV = "POLYAXON_PREFECT_MAX_GRID"
MAX_GRID_DEFAULT = 1_000_000
"""The most points a grid (or entries a mapping) may have: a million trials is more than any
sweep runs to its end, and a file past it is more likely a slip (a ``range`` step of 0.0001)
than a plan. ``POLYAXON_PREFECT_MAX_GRID`` raises it; sizes are counted, never enumerated."""


def max_grid() -> int:
    """The limit in force: ``POLYAXON_PREFECT_MAX_GRID`` when set, else `MAX_GRID_DEFAULT`.

    Raises:
        PydanticCustomError: the setting is not a positive integer (located at the matrix).
    """
    raw = os.environ.get(MAX_GRID_ENV, "").strip().replace("_", "")
    if not raw:
        return MAX_GRID_DEFAULT
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise PydanticCustomError(
        "matrix_max_grid_setting",
        f"the setting {MAX_GRID_ENV} must be a positive integer, got {os.environ[MAX_GRID_ENV]!r}",
        {"hint": f"unset it for the default ({MAX_GRID_DEFAULT:,}) or give a count"},
    )


def _check_size(count: int, what: str, at: str, hint: str) -> None:
    """Refuse a grid or mapping of more than `max_grid` trials, with the count and the limit."""
    limit = max_grid()
    if count > limit:
        raise PydanticCustomError(
            "matrix_too_large",
            f"the {what} has {count:,} trials, more than the limit of {limit:,} ({MAX_GRID_ENV})",
            {"hint": f"{hint}, or raise {MAX_GRID_ENV} if you mean to run them all", "at": at},
        )


def _check_counts(matrix: BaseSpec, *fields: str) -> None:
    """Refuse a count (``numRuns``, ``numInitialRuns``, ``maxIterations``) past `max_grid`:
    a sweep draws or schedules that many trials (a random one samples them all up front), so
    ``numRuns: 1000000000`` would pass ``check`` and exhaust the memory at ``run``."""
    limit = max_grid()
    for name in fields:
        count = getattr(matrix, name, None)
        if isinstance(count, int) and count > limit:
            alias = to_camel(name)
            kind = getattr(matrix, "kind", "")
            raise PydanticCustomError(
                "matrix_too_large",
                f"`{alias}` of the {kind} matrix asks for {count:,} trials, more than the "
                f"limit of {limit:,} ({MAX_GRID_ENV})",
                {
                    "hint": f"ask for fewer, or raise {MAX_GRID_ENV} if you mean to run them all",
                    "at": alias,
                },
            )


class Tuner(BaseSpec):
    """The component that computes the next suggestions of an iterative search."""

    hub_ref: StrictStr
    presets: list[StrictStr] | Ref | None = None
    queue: StrictStr | None = None
    namespace: StrictStr | None = None
    params: dict[StrictStr, Any] | None = None

    @field_validator("presets", mode="before")
    @classmethod
    def _presets_csv(cls, value: object) -> object:
        return value if is_template(value) else split_csv(value)


class _Matrix(BaseSpec):
    """Fields every kind shares."""

    layout_hint: ClassVar[str] = ""
    """What else a ``matrix:`` section of this kind needs, said when a mis-indented file lost
    its ``matrix:`` line (see `MATRIX_SECTION_KINDS`)."""

    counts: ClassVar[tuple[str, ...]] = ()
    """The fields that ask for a number of trials, each capped by `max_grid` (`_check_counts`)."""

    searches_params: ClassVar[bool] = False
    """Whether a model-based sampler searches this kind's params over their ranges (so a
    param of another distribution, a normal, is approximated: `check` warns about each, see
    `specs/matrix/_matrix_warnings.py`); the kinds that enumerate or draw their params leave it
    off."""

    concurrency: PositiveIntOrRef | None = None
    early_stopping: list[EarlyStopping] | None = None
    max_gpu_hours: Annotated[float, Field(ge=0)] | None = None
    """Our extension (not Polyaxon's): stop the sweep once its ended trials held GPUs for this
    many GPU-hours (GPUs x wall time), as early stopping stops it."""
    metric_over_steps: Literal["last", "best"] | None = None
    """Our extension (Polyaxon's ``metric`` has only ``name`` and ``optimization``): which value
    of a trial's metric the sweep ranks and optimises by: ``last`` (Polyaxon's rule, the
    default: its output, else the last value logged) or ``best`` (the best value logged over
    its steps, in the metric's direction)."""

    @model_validator(mode="after")
    def _not_too_many(self) -> Self:
        _check_counts(self, *self.counts)
        return self

    def hp_params(self) -> dict[str, HpParam]:
        """The hyper-parameters by name, in the order written (empty for ``mapping``)."""
        params = getattr(self, "params", None)
        return dict(params) if params else {}

    def objective(self) -> tuple[str | None, bool]:
        """The metric the sweep optimises and whether larger is better.

        ``bayes``/``hyperopt``/``hyperband`` name it; other kinds borrow the first metric early
        stopping's, so a sweep's best still means something.
        """
        match self:
            case Bayes(metric=metric) | Hyperband(metric=metric) | Hyperopt(metric=metric):
                return metric.name, str(metric.optimization) == "maximize"
        for stopping in self.early_stopping or ():
            match stopping:
                case MetricEarlyStopping(metric=name, optimization=optimization):
                    return name, str(optimization) == "maximize"
        return None, False


@dataclass(frozen=True)
class _Unsupported:
    """The params a search strategy cannot handle, and what to say of one."""

    rejected: Callable[[Any], bool]
    message: Callable[[str, str], str]
    """The refusal, from the param's name and kind."""
    hint: str


class _Searched(_Matrix):
    params: dict[StrictStr, HpParam]

    unsupported: ClassVar[_Unsupported | None] = None
    """The params this kind refuses (None: it handles every kind)."""

    @field_validator("params")
    @classmethod
    def _supported(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Refuse the first param (in file order) that the search strategy cannot handle."""
        refused = cls.unsupported
        if refused is None:
            return params
        for name, param in params.items():
            if refused.rejected(param):
                raise PydanticCustomError(
                    "matrix_param_kind",
                    refused.message(name, param.kind),
                    {"hint": refused.hint, "at": name},
                )
        return params


class GridSearch(_Searched):
    """Every combination of the params (first param varies slowest), cut to ``numRuns``."""

    kind: Literal["grid"] = "grid"
    num_runs: PositiveIntOrRef | None = None

    unsupported = _Unsupported(
        lambda p: p.is_distribution,
        lambda name, kind: (
            f"`{name}` defines a distribution (kind `{kind}`), "
            "and grid search can only enumerate discrete params"
        ),
        "use `choice`, `range`, `linspace`, `logspace` or `geomspace`, "
        "or a `random` matrix to sample distributions",
    )

    @model_validator(mode="after")
    def _not_too_large(self) -> Self:
        """The product of the params' counts (nothing enumerated), cut to ``numRuns``."""
        lengths = [hp.length for hp in self.params.values()]
        if any(length is None for length in lengths):  # a template: sized at run time
            return self
        count = math.prod(length or 0 for length in lengths)
        if isinstance(self.num_runs, int):
            count = min(count, self.num_runs)
        _check_size(
            count,
            "grid",
            "params",
            "sample it with a `random` matrix (`numRuns` draws), cut it with `numRuns`",
        )
        return self


class RandomSearch(_Searched):
    """``numRuns`` distinct random draws from the params."""

    kind: Literal["random"] = "random"
    num_runs: PositiveIntOrRef
    seed: IntOrRef | None = None

    counts: ClassVar[tuple[str, ...]] = ("num_runs",)


class Hyperband(_Searched):
    """Hyperband brackets of successive halving over ``resource`` up to ``maxIterations``.

    Polyaxon's model leaves every field optional but its tuner needs them all, so they are
    required here.
    """

    kind: Literal["hyperband"] = "hyperband"
    max_iterations: PositiveIntOrRef
    eta: FloatOrRef
    resource: OptimizationResource
    metric: OptimizationMetric
    resume: BoolOrRef | None = None
    seed: IntOrRef | None = None
    tuner: Tuner | None = None

    counts: ClassVar[tuple[str, ...]] = ("max_iterations",)

    @field_validator("eta")
    @classmethod
    def _check_eta(cls, value: float | str) -> float | str:
        if isinstance(value, float) and value <= 1:
            raise PydanticCustomError(
                "hyperband_eta",
                f"`eta` must be greater than 1, got {value:g}",
                {"hint": "eta is the factor by which each rung cuts the configs; 3 is usual"},
            )
        return value


class GaussianProcess(BaseSpec):
    """The surrogate model of bayesian optimisation."""

    kernel: Literal["matern", "rbf"] = "matern"
    length_scale: float = 1.0
    nu: float = 1.5
    num_restarts_optimizer: int = 0


class UtilityFunction(BaseSpec):
    """The acquisition function of bayesian optimisation and its exploration knob."""

    acquisition_function: Literal["ucb", "ei", "poi"] = "ucb"
    gaussian_process: GaussianProcess | None = None
    kappa: float | None = None
    eps: float | None = None
    num_warmup: int | None = None
    num_iterations: int | None = None

    @model_validator(mode="after")
    def _knob(self) -> Self:
        if self.acquisition_function == "ucb" and self.kappa is None:
            raise PydanticCustomError(
                "acquisition_parameter",
                "the acquisition function `ucb` requires `kappa`",
                {"hint": "add e.g. `kappa: 2.576`; larger values explore more"},
            )
        if self.acquisition_function in ("ei", "poi") and self.eps is None:
            raise PydanticCustomError(
                "acquisition_parameter",
                f"the acquisition function `{self.acquisition_function}` requires `eps`",
                {"hint": "add e.g. `eps: 0.0`; larger values explore more"},
            )
        return self


class Bayes(_Searched):
    """``numInitialRuns`` random runs, then one Gaussian-process suggestion per iteration."""

    searches_params: ClassVar[bool] = True
    kind: Literal["bayes"] = "bayes"
    utility_function: UtilityFunction | None = None
    num_initial_runs: PositiveIntOrRef
    max_iterations: PositiveIntOrRef
    metric: OptimizationMetric
    seed: IntOrRef | None = None
    tuner: Tuner | None = None

    counts: ClassVar[tuple[str, ...]] = ("num_initial_runs", "max_iterations")

    unsupported = _Unsupported(
        lambda p: p.is_distribution and not p.is_uniform,
        lambda name, kind: (
            f"`{name}` defines a non-uniform distribution (kind `{kind}`), "
            "and bayesian optimization only supports discrete params and `uniform`"
        ),
        "use `choice` (with equal weights) or `uniform`",
    )


class Hyperopt(_Searched):
    """``numRuns`` suggestions per iteration from hyperopt's ``tpe``, ``rand`` or ``anneal``."""

    searches_params: ClassVar[bool] = True
    kind: Literal["hyperopt"] = "hyperopt"
    algorithm: Literal["tpe", "rand", "anneal"]
    metric: OptimizationMetric
    num_runs: PositiveIntOrRef
    max_iterations: PositiveIntOrRef | None = None
    seed: IntOrRef | None = None
    tuner: Tuner | None = None

    counts: ClassVar[tuple[str, ...]] = ("num_runs", "max_iterations")

    unsupported = _Unsupported(
        lambda p: p.kind in ("pchoice", "daterange", "datetimerange"),
        lambda name, kind: f"`{name}` is a `{kind}` param, which hyperopt does not support",
        "use `choice` for pchoice, or list the dates with `choice`",
    )


class Iterative(_Matrix):
    """A user tuner (``tuner.hubRef``) proposes suggestions for up to ``maxIterations`` rounds."""

    kind: Literal["iterative"] = "iterative"
    params: dict[StrictStr, HpParam] | None = None
    max_iterations: PositiveIntOrRef
    seed: IntOrRef | None = None
    tuner: Tuner | None = None

    counts: ClassVar[tuple[str, ...]] = ("max_iterations",)


class Mapping(_Matrix):
    """One run per dict of ``values``, with exactly the params that dict sets."""

    kind: Literal["mapping"] = "mapping"
    values: list[Any] | Ref

    layout_hint: ClassVar[str] = " and list its configurations under `values:`"

    @field_validator("values")
    @classmethod
    def _same_keys(cls, values: list[Any] | str) -> list[Any] | str:
        if isinstance(values, str):
            return values
        if not values:
            raise ValueError("`values` needs at least one mapping of params, got an empty list")
        for index, item in enumerate(values):
            if not isinstance(item, dict):
                raise ValueError(
                    f"`values[{index}]` must be a mapping of param names to values, got {item!r}"
                )
        first = list(values[0])
        for index, item in enumerate(values[1:], start=1):
            if set(item) != set(first):
                missing = sorted(set(first) - set(item), key=str)
                extra = sorted(set(item) - set(first), key=str)
                parts = []
                if missing:
                    parts.append(f"lacks {', '.join(map(str, missing))}")
                if extra:
                    parts.append(f"adds {', '.join(map(str, extra))}")
                raise PydanticCustomError(
                    "mapping_keys",
                    f"`values[{index}]` {' and '.join(parts)} compared with `values[0]`: every "
                    "mapping entry must set the same params",
                    {"hint": "give every entry the same keys", "at": index},
                )
        _check_size(len(values), "mapping", "values", "split it into several sweeps")
        return values

    def keys(self) -> list[str]:
        """The param names every entry sets (empty while ``values`` is a template)."""
        if isinstance(self.values, str):
            return []
        return [str(key) for key in self.values[0]]


Matrix = Annotated[
    GridSearch | RandomSearch | Hyperband | Bayes | Hyperopt | Iterative | Mapping,
    Field(discriminator="kind"),
]
"""Any matrix kind, chosen by its ``kind``."""

MATRIX_MODELS: tuple[type[_Matrix], ...] = get_args(get_args(Matrix)[0])
"""The model of each matrix kind, read from the `Matrix` union (a kind added there is here)."""

MATRIX_KINDS: tuple[str, ...] = tuple(m.model_fields["kind"].default for m in MATRIX_MODELS)
"""Every matrix ``kind`` string, in the union's order."""

MATRIX_SECTION_KINDS: dict[str, SectionKind] = {
    model.model_fields["kind"].default: SectionKind("matrix", model.layout_hint)
    for model in MATRIX_MODELS
}
"""The matrix kinds as the YAML reader's ``section_kinds``: ``kind: grid`` nested under a key
with a value means the file lost its ``matrix:`` line."""
