"""Early stopping conditions, their policies, and the optimisation metric/resource."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from polyaxon_prefect.specs.matrix._early_stopping import (
    DiffStoppingPolicy,
    EarlyStopping,
    FailureEarlyStopping,
    MedianStoppingPolicy,
    MetricEarlyStopping,
    Optimization,
    OptimizationMetric,
    OptimizationResource,
    TruncationStoppingPolicy,
)

ADAPTER = TypeAdapter(list[EarlyStopping])


def parse(*items: dict[str, Any]) -> list[Any]:
    return ADAPTER.validate_python(list(items))


def test_metric_and_failure_conditions_from_the_corpus() -> None:
    metric, failure = parse(
        {"kind": "metric_early_stopping", "metric": "accuracy", "value": 0.9,
         "optimization": "maximize"},
        {"kind": "failure_early_stopping", "percent": 0.3},
    )  # fmt: skip
    assert isinstance(metric, MetricEarlyStopping)
    assert metric.optimization is Optimization.MAXIMIZE
    assert metric.value == 0.9
    assert metric.policy is None
    assert isinstance(failure, FailureEarlyStopping)
    assert failure.percent == 0.3
    assert metric.to_dict() == {
        "kind": "metric_early_stopping",
        "metric": "accuracy",
        "value": 0.9,
        "optimization": "maximize",
    }


@pytest.mark.parametrize(
    ("written", "expected"),
    [("MAXIMIZE", Optimization.MAXIMIZE), ("Minimize", Optimization.MINIMIZE),
     ("minimize", Optimization.MINIMIZE)],
)  # fmt: skip
def test_optimization_accepts_upper_and_capitalised(written: str, expected: Any) -> None:
    (metric,) = parse(
        {"kind": "metric_early_stopping", "metric": "loss", "value": 1, "optimization": written}
    )
    assert metric.optimization is expected
    assert OptimizationMetric(name="loss", optimization=written).optimization is expected


def test_metric_condition_requires_metric_value_and_optimization() -> None:
    with pytest.raises(ValidationError) as info:
        parse({"kind": "metric_early_stopping"})
    missing = {error["loc"][-1] for error in info.value.errors()}
    assert missing == {"metric", "value", "optimization"}


def test_metric_value_may_be_a_template_but_not_text() -> None:
    (metric,) = parse(
        {"kind": "metric_early_stopping", "metric": "loss", "value": "{{ target }}",
         "optimization": "minimize"}
    )  # fmt: skip
    assert metric.value == "{{ target }}"
    with pytest.raises(ValidationError, match="`value` must be a number or a"):
        parse(
            {"kind": "metric_early_stopping", "metric": "loss", "value": "low",
             "optimization": "minimize"}
        )  # fmt: skip


def test_unknown_optimization_is_refused() -> None:
    with pytest.raises(ValidationError, match="'maximize' or 'minimize'"):
        parse({"kind": "metric_early_stopping", "metric": "l", "value": 1, "optimization": "up"})


@pytest.mark.parametrize("percent", [0, -5, 100.5, 1000])
def test_failure_percent_is_a_percentage_of_trials(percent: float) -> None:
    with pytest.raises(ValidationError) as info:
        parse({"kind": "failure_early_stopping", "percent": percent})
    (error,) = info.value.errors()
    assert error["loc"] == (0, "failure_early_stopping", "percent")
    assert "percentage of trials, from 0 (excluded) to 100" in error["msg"]


@pytest.mark.parametrize("percent", [0.1, 1, 50, 100, "{{ max_failures }}"])
def test_failure_percent_accepts_0_to_100_and_templates(percent: Any) -> None:
    (failure,) = parse({"kind": "failure_early_stopping", "percent": percent})
    assert failure.percent == percent


def test_policies_are_discriminated_on_kind() -> None:
    base = {"kind": "metric_early_stopping", "metric": "loss", "value": 0.1,
            "optimization": "minimize"}  # fmt: skip
    median, truncation, diff = (
        parse({**base, "policy": policy})[0].policy
        for policy in (
            {"kind": "median", "evaluationInterval": 2, "minSamples": 5},
            {"kind": "truncation", "percent": 20, "evaluationInterval": 1,
             "includeSucceeded": True},
            {"kind": "diff", "percent": 10, "evaluationInterval": 3, "minInterval": 2},
        )
    )  # fmt: skip
    assert isinstance(median, MedianStoppingPolicy)
    assert median.evaluation_interval == 2 and median.min_samples == 5
    assert isinstance(truncation, TruncationStoppingPolicy)
    assert truncation.percent == 20.0 and truncation.include_succeeded is True
    assert isinstance(diff, DiffStoppingPolicy)
    assert diff.min_interval == 2
    assert truncation.to_dict() == {
        "kind": "truncation",
        "percent": 20.0,
        "evaluationInterval": 1,
        "includeSucceeded": True,
    }


@pytest.mark.parametrize("kind", ["truncation", "diff"])
def test_truncation_and_diff_need_percent_and_evaluation_interval(kind: str) -> None:
    with pytest.raises(ValidationError) as info:
        TypeAdapter(TruncationStoppingPolicy | DiffStoppingPolicy).validate_python({"kind": kind})
    missing = {error["loc"][-1] for error in info.value.errors() if error["type"] == "missing"}
    assert missing == {"percent", "evaluationInterval"}


def test_median_policy_needs_nothing_but_rejects_unknown_keys() -> None:
    assert MedianStoppingPolicy.model_validate({"kind": "median"}).evaluation_interval is None
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        MedianStoppingPolicy.model_validate({"kind": "median", "interval": 3})


def test_unknown_early_stopping_kind() -> None:
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        parse({"kind": "average", "metric": "loss"})


@pytest.mark.parametrize(
    ("type_", "raw", "expected"),
    [("int", 3.7, 3), ("int", "9", 9), ("float", 3, 3.0), ("float", "1.5", 1.5)],
)
def test_optimization_resource_casts(type_: str, raw: Any, expected: Any) -> None:
    resource = OptimizationResource(name="epochs", type=type_)
    value = resource.cast_value(raw)
    assert value == expected
    assert type(value) is type(expected)


def test_optimization_resource_type_is_int_or_float() -> None:
    with pytest.raises(ValidationError, match="'int' or 'float'"):
        OptimizationResource(name="epochs", type="str")
