"""Polyaxon's median/truncation/diff policies, judged through a real in-memory Optuna study."""

from __future__ import annotations

from collections.abc import Sequence

import optuna
import pytest
from optuna.pruners import NopPruner
from pydantic import TypeAdapter

from polyaxon_prefect.search._optuna._pruning import PolicyPruner, build_pruner
from polyaxon_prefect.specs.matrix._early_stopping import MetricEarlyStopping

# four reference trials, losses falling with the steps
OTHERS = [
    [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2],
    [1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
    [1.2, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
    [1.3, 1.2, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5],
]
BAD = [5.0] * 9
GOOD = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]


def _study(
    pruner: PolicyPruner, others: Sequence[Sequence[float]], *, finish: bool = False
) -> optuna.Study:
    """A study whose reference trials have reported their curves (left running unless
    ``finish``)."""
    study = optuna.create_study(pruner=pruner)
    for curve in others:
        trial = study.ask()
        for step, value in enumerate(curve):
            trial.report(value, step)
        if finish:
            study.tell(trial, curve[-1])
    return study


def _pruned_at(study: optuna.Study, curve: Sequence[float]) -> list[int]:
    """Steps at which a new trial reporting ``curve`` is told to stop."""
    trial = study.ask()
    steps = []
    for step, value in enumerate(curve):
        trial.report(value, step)
        if trial.should_prune():
            steps.append(step)
    return steps


def _negated(curve: Sequence[float]) -> list[float]:
    return [-v for v in curve]


def test_median_prunes_a_bad_trial_and_keeps_a_good_one() -> None:
    pruner = PolicyPruner("median", maximize=False)
    assert _pruned_at(_study(pruner, OTHERS), BAD) == list(range(9))
    assert _pruned_at(_study(pruner, OTHERS), GOOD) == []


def test_median_compares_best_so_far_with_running_averages() -> None:
    # at step 2 the others' running averages are 0.9, 1.0, 1.1, 1.2 (median 1.05): a trial
    # whose best so far is 1.0 survives though its latest value (1.5) is worse than all of them
    pruner = PolicyPruner("median", maximize=False)
    assert 2 not in _pruned_at(_study(pruner, OTHERS), [1.0, 1.5, 1.5])
    assert _pruned_at(_study(pruner, OTHERS), [1.2, 1.5, 1.5]) == [0, 1, 2]


def test_median_follows_the_policy_direction() -> None:
    pruner = PolicyPruner("median", maximize=True)
    accuracies = [_negated(curve) for curve in OTHERS]
    assert _pruned_at(_study(pruner, accuracies), _negated(BAD)) == list(range(9))
    assert _pruned_at(_study(pruner, accuracies), _negated(GOOD)) == []
    # losses judged as if larger were better: the good trial is the one stopped
    flipped = _study(PolicyPruner("median", maximize=True), OTHERS)
    assert _pruned_at(flipped, GOOD)[:3] == [0, 1, 2]


def test_min_interval_and_evaluation_interval_pick_the_judged_steps() -> None:
    pruner = PolicyPruner("median", maximize=False, min_interval=2, evaluation_interval=3)
    # nothing before step 2, then every 3 steps counted from there
    assert _pruned_at(_study(pruner, OTHERS), BAD) == [2, 5, 8]


def test_min_samples_waits_for_enough_other_trials() -> None:
    four = PolicyPruner("median", maximize=False, min_samples=4)
    assert _pruned_at(_study(four, OTHERS), BAD) == list(range(9))
    five = PolicyPruner("median", maximize=False, min_samples=5)
    assert _pruned_at(_study(five, OTHERS), BAD) == []
    # a trial that has not reached the step yet is no sample for it
    short = [curve[:3] for curve in OTHERS]
    assert _pruned_at(_study(four, short), BAD) == list(range(9))


def test_truncation_stops_the_worst_percent_only() -> None:
    # 4 others + the judged trial = 5 trials; 20 % of them is the single worst
    pruner = PolicyPruner("truncation", maximize=False, percent=20)
    assert _pruned_at(_study(pruner, OTHERS), BAD) == list(range(9))
    assert _pruned_at(_study(pruner, OTHERS), GOOD) == []
    # second worst at every step (between the 3rd and 4th reference curves): not in the worst 20 %
    second_worst = [v - 0.05 for v in OTHERS[3]]
    assert _pruned_at(_study(pruner, OTHERS), second_worst) == []
    # ... but in the worst 40 %
    forty = PolicyPruner("truncation", maximize=False, percent=40)
    assert _pruned_at(_study(forty, OTHERS), second_worst) == list(range(9))


def test_truncation_counts_finished_trials_only_when_asked() -> None:
    pruner = PolicyPruner("truncation", maximize=False, percent=20)
    assert _pruned_at(_study(pruner, OTHERS, finish=True), BAD) == []
    including = PolicyPruner("truncation", maximize=False, percent=20, include_succeeded=True)
    assert _pruned_at(_study(including, OTHERS, finish=True), BAD) == list(range(9))


def test_truncation_spares_ties() -> None:
    pruner = PolicyPruner("truncation", maximize=False, percent=50)
    flat = [[1.0, 1.0]] * 3
    assert _pruned_at(_study(pruner, flat), [1.0, 1.0]) == []
    assert _pruned_at(_study(pruner, flat), [1.0, 2.0]) == [1]


def test_diff_stops_a_trial_too_far_from_the_best() -> None:
    # judged at step 8 only: the best value there is 0.2, 50 % of it is 0.1, so 0.35 is too
    # far and 0.25 is not
    pruner = PolicyPruner("diff", maximize=False, percent=50, min_interval=8)
    assert _pruned_at(_study(pruner, OTHERS), [9.0] * 8 + [0.35]) == [8]
    assert _pruned_at(_study(pruner, OTHERS), [9.0] * 8 + [0.25]) == []
    assert _pruned_at(_study(pruner, OTHERS), [0.1] * 9) == []
    maximize = PolicyPruner("diff", maximize=True, percent=10)
    accuracy = [[0.5, 0.7, 0.9], [0.4, 0.6, 0.8]]
    assert _pruned_at(_study(maximize, accuracy), [0.2, 0.62, 0.85]) == [0, 1]


def test_a_nan_value_is_pruned() -> None:
    pruner = PolicyPruner("median", maximize=False, min_samples=10)
    assert _pruned_at(_study(pruner, OTHERS), [1.0, float("nan")]) == [1]


def _stopping(data: dict) -> MetricEarlyStopping:
    return TypeAdapter(MetricEarlyStopping).validate_python(
        {"kind": "metric_early_stopping", "metric": "loss", "value": 0.0, **data}
    )


def test_build_pruner_reads_the_first_policy() -> None:
    plain = _stopping({"optimization": "minimize"})
    assert isinstance(build_pruner([plain]), NopPruner)
    assert isinstance(build_pruner(None), NopPruner)
    truncation = _stopping(
        {
            "optimization": "maximize",
            "policy": {
                "kind": "truncation",
                "percent": 30,
                "evaluationInterval": 2,
                "minInterval": 4,
                "minSamples": 3,
                "includeSucceeded": True,
            },
        }
    )
    median = _stopping({"optimization": "minimize", "policy": {"kind": "median"}})
    pruner = build_pruner([plain, truncation, median])
    assert isinstance(pruner, PolicyPruner)
    assert (
        pruner.kind,
        pruner.maximize,
        pruner.percent,
        pruner.evaluation_interval,
        pruner.min_interval,
        pruner.min_samples,
        pruner.include_succeeded,
    ) == ("truncation", True, 30.0, 2, 4, 3, True)


def test_build_pruner_refuses_unrendered_templates() -> None:
    templated = _stopping(
        {
            "optimization": "minimize",
            "policy": {"kind": "diff", "percent": "{{ pct }}", "evaluationInterval": 1},
        }
    )
    with pytest.raises(ValueError, match=r"`percent` is a template .*render it"):
        build_pruner([templated])


def test_policy_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown early stopping policy 'average'"):
        PolicyPruner("average", maximize=False)
    with pytest.raises(ValueError, match=r"truncation policy needs a `percent` in \(0, 100\]"):
        PolicyPruner("truncation", maximize=False, percent=0)
