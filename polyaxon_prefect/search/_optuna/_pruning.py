"""Polyaxon's metric early-stopping policies as Optuna pruners.

A ``metric_early_stopping`` with a ``policy`` stops individual trials from the intermediate values
they report (``tracking.log_metrics(step=...)`` forwarded to ``SweepStudy.report``). Polyaxon CE
parses these policies but never acts on them (spec 8.1), so the semantics follow their docs:

- ``median``: stop a trial whose best value so far is worse than the median of the other trials'
  running averages at the same step;
- ``truncation``: stop a trial that is among the worst ``percent`` % of the trials at that step,
  itself included (finished trials count only with ``includeSucceeded``);
- ``diff``: stop a trial worse than the best trial at that step by more than ``percent`` % of the
  best value.

Shared settings: nothing is judged before step ``minInterval``; then only every
``evaluationInterval`` steps counted from there; and only once ``minSamples`` other trials have a
value to compare with. The policy carries its own direction (``optimization``), which may differ
from the matrix metric's, so these pruners never read ``study.direction``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from optuna.pruners import BasePruner, NopPruner
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.specs import (
    DiffStoppingPolicy,
    EarlyStopping,
    MedianStoppingPolicy,
    MetricEarlyStopping,
    StoppingPolicy,
    TruncationStoppingPolicy,
)

__all__ = ["PolicyPruner", "build_pruner"]


def _number(value: Any, label: str, default: float | None = None) -> float:
    if value is None:
        if default is None:
            raise ValueError(f"early stopping policy needs `{label}`")
        return default
    if isinstance(value, str):
        raise ValueError(
            f"early stopping `{label}` is a template ({value!r}): render it before running"
        )
    return float(value)


class PolicyPruner(BasePruner):
    """One of Polyaxon's ``median``, ``truncation`` or ``diff`` policies on one metric."""

    def __init__(
        self,
        kind: str,
        *,
        maximize: bool,
        percent: float | None = None,
        evaluation_interval: int = 1,
        min_interval: int = 0,
        min_samples: int = 1,
        include_succeeded: bool = False,
    ) -> None:
        if kind not in ("median", "truncation", "diff"):
            raise ValueError(f"unknown early stopping policy {kind!r}")
        if kind != "median" and (percent is None or not 0 < percent <= 100):
            raise ValueError(f"the {kind} policy needs a `percent` in (0, 100], got {percent!r}")
        self.kind = kind
        self.maximize = maximize
        self.percent = percent
        self.evaluation_interval = max(1, int(evaluation_interval))
        self.min_interval = max(0, int(min_interval))
        self.min_samples = max(1, int(min_samples))
        self.include_succeeded = include_succeeded

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.maximize else a < b

    def _others(self, study: Study, trial: FrozenTrial) -> Sequence[FrozenTrial]:
        states = [TrialState.RUNNING, TrialState.PRUNED]
        if self.kind != "truncation" or self.include_succeeded:
            states.append(TrialState.COMPLETE)
        return [
            other
            for other in study.get_trials(deepcopy=False, states=tuple(states))
            if other.number != trial.number and other.intermediate_values
        ]

    def prune(self, study: Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None or step < self.min_interval:
            return False
        if (step - self.min_interval) % self.evaluation_interval:
            return False
        value = trial.intermediate_values[step]
        if math.isnan(value):
            return True
        upto = [
            [v for s, v in other.intermediate_values.items() if s <= step and not math.isnan(v)]
            for other in self._others(study, trial)
        ]
        upto = [values for values in upto if values]
        if len(upto) < self.min_samples:
            return False
        if self.kind == "median":
            mine = [v for s, v in trial.intermediate_values.items() if s <= step]
            best = max(mine) if self.maximize else min(mine)
            averages = sorted(sum(values) / len(values) for values in upto)
            mid = len(averages) // 2
            median = averages[mid] if len(averages) % 2 else (averages[mid - 1] + averages[mid]) / 2
            return self._better(median, best)
        latest = [values[-1] for values in upto]
        if self.kind == "truncation":
            assert self.percent is not None
            better = sum(1 for v in latest if self._better(v, value))
            total = len(latest) + 1
            # this trial and every one no better than it (ties included) must fit in the worst
            # `percent` share: 25 % of 8 trials stops the worst 2, of 3 trials none
            return total - better <= total * self.percent / 100 + 1e-9
        assert self.percent is not None
        best = max(latest) if self.maximize else min(latest)
        slack = abs(best) * self.percent / 100
        return value < best - slack if self.maximize else value > best + slack


def build_pruner(early_stopping: Sequence[EarlyStopping] | None) -> BasePruner:
    """The pruner for the first metric early stopping that has a policy (Optuna's no-op pruner
    when none has one)."""
    for stopping in early_stopping or ():
        match stopping:
            case MetricEarlyStopping(policy=policy) if policy is not None:
                return _policy_pruner(policy, maximize=str(stopping.optimization) == "maximize")
    return NopPruner()


def _policy_pruner(policy: StoppingPolicy, *, maximize: bool) -> PolicyPruner:
    match policy:
        case MedianStoppingPolicy():
            percent, include_succeeded = None, False
        case TruncationStoppingPolicy(percent=given, include_succeeded=include):
            percent, include_succeeded = _number(given, "percent"), bool(include or False)
        case DiffStoppingPolicy(percent=given):
            percent, include_succeeded = _number(given, "percent"), False
    return PolicyPruner(
        policy.kind,
        maximize=maximize,
        percent=percent,
        evaluation_interval=int(_number(policy.evaluation_interval, "evaluationInterval", 1)),
        min_interval=int(_number(policy.min_interval, "minInterval", 0)),
        min_samples=int(_number(policy.min_samples, "minSamples", 1)),
        include_succeeded=include_succeeded,
    )
