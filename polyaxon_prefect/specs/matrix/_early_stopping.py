"""Early stopping of matrix and DAG pipelines, and the optimisation metric/resource objects.

Polyaxon CE evaluates only two conditions: a failure percentage, and a metric threshold without a
policy. The median/truncation/diff policies parse but are not acted on there (spec 8.1); they are
modelled here so valid files stay valid, and the runtime decides what it executes.
"""

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._or_ref import BoolOrRef, FloatOrRef, IntOrRef

__all__ = [
    "DiffStoppingPolicy",
    "EarlyStopping",
    "FailureEarlyStopping",
    "MedianStoppingPolicy",
    "MetricEarlyStopping",
    "Optimization",
    "OptimizationMetric",
    "OptimizationResource",
    "StoppingPolicy",
    "TruncationStoppingPolicy",
]


class Optimization(StrEnum):
    """Whether a metric is better when larger or smaller."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


def _lower_optimization(value: object) -> Any:
    """Polyaxon also accepts ``MAXIMIZE`` and ``Maximize``."""
    if isinstance(value, str):
        return value.strip().lower()
    return value


class OptimizationMetric(BaseSpec):
    """The metric a search optimises: its output name and direction."""

    name: StrictStr
    optimization: Optimization

    @field_validator("optimization", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return _lower_optimization(value)


class OptimizationResource(BaseSpec):
    """The budget Hyperband hands out per rung (e.g. ``epochs``), and its number type."""

    name: StrictStr
    type: Literal["int", "float"]

    def cast_value(self, value: Any) -> int | float:
        """The resource as its declared type (``int`` truncates, like Polyaxon)."""
        return int(value) if self.type == "int" else float(value)


class MedianStoppingPolicy(BaseSpec):
    """Stop a run whose best metric is worse than the median of the running runs."""

    kind: Literal["median"] = "median"
    evaluation_interval: IntOrRef | None = None
    min_interval: IntOrRef | None = None
    min_samples: IntOrRef | None = None


class TruncationStoppingPolicy(BaseSpec):
    """Stop the worst ``percent`` of running runs at every evaluation."""

    kind: Literal["truncation"] = "truncation"
    percent: FloatOrRef
    evaluation_interval: IntOrRef
    min_interval: IntOrRef | None = None
    min_samples: IntOrRef | None = None
    include_succeeded: BoolOrRef | None = None


class DiffStoppingPolicy(BaseSpec):
    """Stop a run worse than the best run by more than ``percent``."""

    kind: Literal["diff"] = "diff"
    percent: FloatOrRef
    evaluation_interval: IntOrRef
    min_interval: IntOrRef | None = None
    min_samples: IntOrRef | None = None


StoppingPolicy = Annotated[
    MedianStoppingPolicy | TruncationStoppingPolicy | DiffStoppingPolicy,
    Field(discriminator="kind"),
]
"""A metric early-stopping policy, chosen by its ``kind``."""


class MetricEarlyStopping(BaseSpec):
    """Stop the pipeline once a run's ``metric`` reaches ``value`` in the ``optimization``
    direction (``>=`` when maximising, ``<=`` when minimising)."""

    kind: Literal["metric_early_stopping"] = "metric_early_stopping"
    metric: StrictStr
    value: FloatOrRef
    optimization: Optimization
    policy: StoppingPolicy | None = None

    @field_validator("optimization", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return _lower_optimization(value)


class FailureEarlyStopping(BaseSpec):
    """Stop the pipeline once ``percent`` % of its runs have failed."""

    kind: Literal["failure_early_stopping"] = "failure_early_stopping"
    percent: FloatOrRef

    @field_validator("percent")
    @classmethod
    def _check_percent(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0 < value <= 100:
            raise ValueError(
                f"`percent` is a percentage of trials, from 0 (excluded) to 100, got {value:g}"
            )
        return value


EarlyStopping = Annotated[
    MetricEarlyStopping | FailureEarlyStopping,
    Field(discriminator="kind"),
]
"""An early-stopping condition, chosen by its ``kind``."""
