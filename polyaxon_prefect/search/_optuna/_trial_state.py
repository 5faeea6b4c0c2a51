"""One table between a trial's Polyaxon status and its Optuna state, both ways.

What the study tells Optuna is what happened, so optuna-dashboard and the sweep's own views
(the end lines, ``get``, the leaderboard) read the same facts:

- ``succeeded`` is ``COMPLETE``, with the matrix metric's value. A sweep without a metric has
  nothing to rank by, but Optuna requires a value for a ``COMPLETE`` trial of its
  single-objective study: every succeeded trial of such a sweep is told `NO_METRIC_VALUE`
  (0), and the study's objective is named `NO_METRIC_NAME`, so the dashboard shows the
  trials green with their params, on a flat line that ranks nothing. The sweep never reads
  that value back (a metric-less sweep has no best trial);
- a trial of a sweep *with* a metric that succeeded without reporting it is ``FAIL``: Optuna
  has no value to rank it by (as when an objective returns none); its ``status`` user attr
  says ``succeeded``, its ``value`` none;
- ``stopped`` is ``PRUNED`` (a stopping policy's prune, or a stop of the sweep: such a trial is
  ``unfinished``, run again by ``--resume``);
- anything else is ``FAIL``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

from optuna.trial import FrozenTrial, TrialState

from polyaxon_prefect.search._optuna._attrs import decode
from polyaxon_prefect.search._trial_records import PENDING, TrialRecord, TrialStatus
from polyaxon_prefect.specs import Status

__all__ = ["NO_METRIC_NAME", "NO_METRIC_VALUE", "finished_state", "trial_record", "trial_status"]

NO_METRIC_VALUE: Final = 0.0
"""The value a succeeded trial of a metric-less sweep is told (module docstring)."""
NO_METRIC_NAME: Final = "no metric (0)"
"""The objective's name in a metric-less sweep's study, as optuna-dashboard shows it."""


def finished_state(
    status: Status, value: float | None, scored: bool
) -> tuple[TrialState, list[float] | None]:
    """The Optuna state and values a trial that ended ``status`` is told; ``value`` is its
    finite metric value, if any, ``scored`` whether the sweep has a metric."""
    if status == Status.SUCCEEDED:
        if not scored:
            return TrialState.COMPLETE, [NO_METRIC_VALUE]
        if value is not None:
            return TrialState.COMPLETE, [value]
        return TrialState.FAIL, None
    if status == Status.STOPPED:
        return TrialState.PRUNED, None
    return TrialState.FAIL, None


def trial_status(trial: FrozenTrial) -> TrialStatus:
    """The Polyaxon status of a trial (the one ``tell`` recorded, once it has finished)."""
    if trial.state == TrialState.WAITING:
        return PENDING
    if trial.state == TrialState.RUNNING:
        return Status.RUNNING
    recorded = trial.user_attrs.get("status")
    if recorded:
        with contextlib.suppress(ValueError):  # a word that is not a status: read the state
            return Status(recorded)
    return {TrialState.COMPLETE: Status.SUCCEEDED, TrialState.PRUNED: Status.STOPPED}.get(
        trial.state, Status.FAILED
    )


def trial_record(trial: FrozenTrial, scored: bool) -> TrialRecord:
    """A trial as the sweep shows it; ``scored``: the sweep has a metric (a metric-less
    sweep's Optuna value is `NO_METRIC_VALUE`, no value of the trial's)."""
    user: dict[str, Any] = trial.user_attrs
    value = decode(user.get("value"))
    if value is None and scored and trial.state == TrialState.COMPLETE:
        value = trial.value
    return TrialRecord(
        number=trial.number,
        index=int(user["index"]),
        params=decode(user.get("params", {})),
        status=trial_status(trial),
        value=value,
        outputs=decode(user.get("outputs", {})),
        metrics=decode(user.get("metrics", {})),
        uuid=user.get("uuid"),
        attrs=decode(user.get("attrs", {})),
        message=user.get("message", "") or "",
        gpu_hours=user.get("gpu_hours"),
        unfinished=bool(user.get("unfinished")),
    )
