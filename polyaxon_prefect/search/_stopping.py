"""Early stopping of a whole sweep (or DAG) from the results of its finished runs.

Two conditions, evaluated after each run finishes, in the order the policies are written (the
first that holds decides):

- ``metric_early_stopping`` WITHOUT a ``policy``: some finished run reported ``metric`` at or
  past ``value`` (``>=`` when maximising, ``<=`` when minimising), whatever that run's status.
  The goal is reached, so the sweep ends ``succeeded`` with the reason; the runs still pending
  or in flight end ``stopped``. (Polyaxon's docs say the pipeline succeeds; CE's code marks it
  stopped. We follow the docs: reaching the target is a success.)
- ``failure_early_stopping``: at least one run failed and the failed share (``failed`` and
  ``upstream_failed``) reached ``percent`` % of ``total`` (the planned number of runs; the
  finished count when the total is open-ended). The sweep ends ``failed``; the remaining runs
  end ``stopped``.

A metric policy (``median``/``truncation``/``diff``) prunes single trials from intermediate
values; that is the study's job (Optuna pruners), so such entries are skipped here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.specs import (
    FAILED_STATUSES,
    FailureEarlyStopping,
    MetricEarlyStopping,
    Status,
)

__all__ = ["FAILED", "RunSummary", "StopDecision", "check_early_stopping"]

FAILED = FAILED_STATUSES
"""Statuses that count as failures for ``failure_early_stopping`` (the triggers' failures)."""


@dataclass(frozen=True)
class RunSummary:
    """One finished trial or op: its Polyaxon status and the last value of each metric.

    ``name`` (an op name, ``trial-7``) only labels the reason; without it the run's position
    in ``finished`` does.
    """

    status: str
    metrics: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None


@dataclass(frozen=True)
class StopDecision:
    """Why the sweep stops, and the status it ends as (``succeeded`` or ``failed``)."""

    reason: str
    status: Status


def _number(value: object) -> float | None:
    """A finite metric value as a float, or None (missing, not a number, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _rendered(
    policy: MetricEarlyStopping | FailureEarlyStopping, field_name: str, value: Any
) -> float:
    if isinstance(value, str):
        raise ValueError(
            f"{policy.kind} `{field_name}` is a template ({value!r}): render it before "
            "checking early stopping"
        )
    return float(value)


def _label(run: RunSummary, index: int) -> str:
    return f"`{run.name}`" if run.name else f"run {index}"


def _metric_hit(policy: MetricEarlyStopping, finished: Sequence[RunSummary]) -> StopDecision | None:
    threshold = _rendered(policy, "value", policy.value)
    maximize = str(policy.optimization) == "maximize"
    for index, run in enumerate(finished):
        value = _number(run.metrics.get(policy.metric))
        if value is None:
            continue
        if (value >= threshold) if maximize else (value <= threshold):
            sign = ">=" if maximize else "<="
            return StopDecision(
                reason=(
                    f"metric early stopping: {_label(run, index)} reached "
                    f"{policy.metric}={value:g} ({sign} {threshold:g})"
                ),
                status=Status.SUCCEEDED,
            )
    return None


def _failure_hit(
    policy: FailureEarlyStopping, finished: Sequence[RunSummary], total: int | None
) -> StopDecision | None:
    percent = _rendered(policy, "percent", policy.percent)
    failed = sum(1 for run in finished if run.status in FAILED)
    count = total if total is not None else len(finished)
    if failed == 0 or count <= 0:
        return None
    share = 100.0 * failed / count
    if share < percent:
        return None
    return StopDecision(
        reason=(
            f"failure early stopping: {failed} of {count} runs failed "
            f"({share:.4g}% >= {percent:g}%)"
        ),
        status=Status.FAILED,
    )


def check_early_stopping(
    policies: Sequence[Any] | None, finished: Sequence[RunSummary], total: int | None
) -> StopDecision | None:
    """The first early-stopping condition that holds for the runs finished so far, or None.

    ``policies`` are ``MetricEarlyStopping``/``FailureEarlyStopping`` specs (a matrix's or a
    DAG's ``earlyStopping``); ``total`` is the planned number of runs (None when open-ended).
    """
    for policy in policies or ():
        if policy.kind == "metric_early_stopping":
            if policy.policy is not None:
                continue
            decision = _metric_hit(policy, finished)
        elif policy.kind == "failure_early_stopping":
            decision = _failure_hit(policy, finished, total)
        else:
            raise ValueError(f"unknown early stopping kind {policy.kind!r}")
        if decision is not None:
            return decision
    return None
