"""Early stopping of a sweep: a metric threshold reached (succeeded) or too many failures
(failed); metric policies are left to the study's pruners."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.search import RunSummary, StopDecision, check_early_stopping
from polyaxon_prefect.specs.matrix._early_stopping import EarlyStopping

POLICY = TypeAdapter(EarlyStopping)


def policy(**data: Any) -> Any:
    return POLICY.validate_python(data)


def metric(value: float, optimization: str = "minimize", **extra: Any) -> Any:
    return policy(
        kind="metric_early_stopping",
        metric="loss",
        value=value,
        optimization=optimization,
        **extra,
    )


def failure(percent: float) -> Any:
    return policy(kind="failure_early_stopping", percent=percent)


def ok(loss: Any) -> RunSummary:
    return RunSummary(status="succeeded", metrics={"loss": loss})


def test_minimize_stops_when_a_run_reaches_the_value() -> None:
    policies = [metric(0.1)]
    assert check_early_stopping(policies, [ok(0.5), ok(0.2)], 10) is None
    decision = check_early_stopping(policies, [ok(0.5), ok(0.1)], 10)
    assert decision == StopDecision(
        reason="metric early stopping: run 1 reached loss=0.1 (<= 0.1)", status="succeeded"
    )


def test_maximize_stops_at_or_above_the_value() -> None:
    policies = [metric(0.9, "MAXIMIZE")]
    assert check_early_stopping(policies, [ok(0.89)], None) is None
    decision = check_early_stopping(policies, [ok(0.89), ok(0.95)], None)
    assert decision is not None
    assert decision.status == "succeeded"
    assert "loss=0.95 (>= 0.9)" in decision.reason
    named = RunSummary("succeeded", {"loss": 0.99}, name="trial-7")
    assert check_early_stopping(policies, [named], None).reason.startswith(  # type: ignore[union-attr]
        "metric early stopping: `trial-7` reached loss=0.99"
    )


def test_metric_ignores_missing_and_non_numeric_values() -> None:
    runs = [
        RunSummary("succeeded", {}),
        ok(None),
        ok(float("nan")),
        ok("n/a"),
        ok(True),
        RunSummary("succeeded", {"accuracy": 0.0}),
    ]
    assert check_early_stopping([metric(0.1)], runs, 10) is None
    assert check_early_stopping([metric(0.1)], [*runs, ok("0.05")], 10) is not None


def test_metric_counts_a_run_whatever_its_status() -> None:
    # Polyaxon checks the metric of every child, as reported
    run = RunSummary(status="failed", metrics={"loss": 0.01})
    assert check_early_stopping([metric(0.1)], [run], 10) is not None


def test_metric_with_a_policy_is_left_to_the_pruners() -> None:
    median = metric(0.1, policy={"kind": "median", "evaluationInterval": 1})
    assert check_early_stopping([median], [ok(0.0)], 10) is None


def test_failure_share_of_the_planned_total() -> None:
    policies = [failure(30)]
    failed = RunSummary("failed", {})
    runs = [failed, failed, ok(1.0)]
    assert check_early_stopping(policies, runs, 10) is None  # 2 of 10 = 20 %
    decision = check_early_stopping(policies, [*runs, RunSummary("upstream_failed", {})], 10)
    assert decision == StopDecision(
        reason="failure early stopping: 3 of 10 runs failed (30% >= 30%)", status="failed"
    )


def test_failure_share_of_finished_runs_when_open_ended() -> None:
    runs = [RunSummary("failed", {}), ok(1.0), ok(2.0)]
    assert check_early_stopping([failure(50)], runs, None) is None
    decision = check_early_stopping([failure(30)], runs, None)
    assert decision is not None and decision.status == "failed"


def test_failure_needs_a_failed_run_and_ignores_stopped_and_skipped() -> None:
    runs = [RunSummary("stopped", {}), RunSummary("skipped", {}), ok(1.0)]
    assert check_early_stopping([failure(0.3)], runs, 3) is None
    runs.append(RunSummary("failed", {}))
    # `percent: 0.3` (the quick-start's) is 0.3 %, not 30 %: 1 of 1000 is not enough, 1 of 300 is
    assert check_early_stopping([failure(0.3)], runs, 1000) is None
    decision = check_early_stopping([failure(0.3)], runs, 300)
    assert decision is not None
    assert "1 of 300 runs failed" in decision.reason


def test_first_policy_written_wins() -> None:
    runs = [RunSummary("failed", {"loss": 0.0})]
    both = [metric(0.1), failure(10)]
    assert check_early_stopping(both, runs, 1).status == "succeeded"  # type: ignore[union-attr]
    assert check_early_stopping(both[::-1], runs, 1).status == "failed"  # type: ignore[union-attr]


def test_no_policies_never_stop() -> None:
    assert check_early_stopping(None, [RunSummary("failed", {})], 1) is None
    assert check_early_stopping([], [RunSummary("failed", {})], 1) is None


def test_templates_must_be_rendered() -> None:
    with pytest.raises(ValueError, match="`value` is a template"):
        check_early_stopping([metric("{{ target }}")], [ok(0.0)], 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`percent` is a template"):
        check_early_stopping([failure("{{ p }}")], [RunSummary("failed", {})], 1)  # type: ignore[arg-type]
