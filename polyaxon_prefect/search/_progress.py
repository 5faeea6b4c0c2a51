"""How far a run is, without Prefect or a clock: a sweep's counts, best so far and ETA, a
job's ``log_progress`` fraction and ETA, and the words people read for them.

The Prefect layer measures (trial durations, elapsed seconds) and publishes (the progress
artifact, the flow run's progress label, the terminal's live block, the ``trial 7/20 ...``
log line); what those say is computed here, so every place shows the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.client import display, format_eta, progress_words
from polyaxon_prefect.search._sweep import finite, jsonable
from polyaxon_prefect.specs import Status

__all__ = [
    "BEST_OVER_STEPS",
    "LAST_VALUE",
    "Best",
    "JobProgress",
    "SweepProgress",
    "SweepTracker",
    "best_over_steps",
    "format_eta",
    "job_eta",
    "metric_values",
    "objective_value",
    "progress_words",
    "ranked_by",
    "sweep_eta",
    "trial_line",
]

BEST_OVER_STEPS = "best"
LAST_VALUE = "last"


def ranked_by(over_steps: str | None) -> str:
    """What a sweep's value of a trial is, in words: ``best over steps`` or ``last``."""
    return "best over steps" if over_steps == BEST_OVER_STEPS else "last"


def best_over_steps(values: Iterable[Any], maximize: bool) -> float | None:
    """The best finite value of a metric's history (largest when ``maximize``), else None."""
    numbers = [v for v in (finite(value) for value in values) if v is not None]
    if not numbers:
        return None
    return max(numbers) if maximize else min(numbers)


def metric_values(records: Iterable[Mapping[str, Any]], metric: str) -> list[Any]:
    """The values of ``metric`` in a run's metric records (`tracking.read_metrics_file`), in
    the order logged."""
    return [record[metric] for record in records if metric in record]


def objective_value(
    metric: str | None,
    outputs: Mapping[str, Any],
    metrics: Mapping[str, Any],
    history: Sequence[Any],
    *,
    over_steps: str | None,
    maximize: bool,
) -> Any:
    """A trial's value of the sweep's ``metric``: its output, else the metric's last logged
    value (Polyaxon's rule); with ``over_steps`` ``best``, the best value of its ``history``
    (the values logged at each step) when it logged any, the output counted as one more."""
    if metric is None:
        return None
    last = outputs.get(metric, metrics.get(metric))
    if over_steps != BEST_OVER_STEPS:
        return last
    best = best_over_steps([*history, last], maximize)
    return best if best is not None else last


def sweep_eta(
    durations: Sequence[float],
    remaining: int,
    running_elapsed: Sequence[float],
    concurrency: int,
) -> float | None:
    """Seconds until a sweep's ``remaining`` trials (those running included) are done: the
    mean duration of the trials finished so far, times the trials left, less what the running
    ones have done already (each at most a mean), shared by ``concurrency`` slots (no more than
    there are trials left). None before a trial finished: nothing to go on yet."""
    if remaining <= 0:
        return 0.0
    if not durations:
        return None
    mean = sum(durations) / len(durations)
    work = remaining * mean - sum(min(elapsed, mean) for elapsed in running_elapsed)
    slots = max(1, min(concurrency, remaining))
    return max(0.0, work / slots)


def job_eta(fraction: float | None, elapsed: float) -> float | None:
    """Seconds left to a job that is ``fraction`` done after ``elapsed`` seconds, at the rate
    so far (None at 0: no rate yet)."""
    if fraction is None or fraction <= 0:
        return None
    if fraction >= 1:
        return 0.0
    return elapsed * (1 - fraction) / fraction


@dataclass(frozen=True)
class Best:
    """The best trial so far: its value of the sweep's metric, index and params."""

    value: float
    trial: int
    params: Mapping[str, Any] = field(default_factory=dict)

    def better_than(self, other: Best | None, maximize: bool) -> bool:
        if other is None:
            return True
        return self.value > other.value if maximize else self.value < other.value

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "trial": self.trial, "params": jsonable(dict(self.params))}


@dataclass(frozen=True)
class SweepProgress:
    """How far a sweep is: trials done (ended, whatever their status) of ``total`` (None:
    open-ended), running, failed, the best so far by ``metric`` and the ETA in seconds."""

    done: int
    total: int | None
    running: int = 0
    failed: int = 0
    metric: str | None = None
    best: Best | None = None
    eta_seconds: float | None = None
    over_steps: str | None = None

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)

    @property
    def going(self) -> bool:
        """Trials are still to end (running, or not started yet)."""
        return bool(self.running) or (self.total is not None and self.done < self.total)

    def count(self) -> str:
        """``7/20`` (``7/?``: open-ended)."""
        return f"{self.done}/{self.total if self.total else '?'}"

    def best_words(self) -> str:
        """``best loss 0.29 (trial 4)``; empty before a trial has a value."""
        if self.best is None:
            return ""
        return f"best {self.metric} {display(self.best.value)} (trial {self.best.trial})"

    def description(self) -> str:
        """The progress artifact's description: ``7 of 20 trials done, 2 running, 1 failed;
        best loss 0.29 (trial 4), last value; ETA 1m20s``."""
        of = self.total if self.total else "?"
        parts = [f"{self.done} of {of} trials done"]
        parts += [f"{self.running} running"] if self.running else []
        parts += [f"{self.failed} failed"] if self.failed else []
        text = ", ".join(parts)
        if self.best is not None:
            text += f"; {self.best_words()}, {ranked_by(self.over_steps)} value"
        if self.eta_seconds is not None and self.going:
            text += f"; ETA {format_eta(self.eta_seconds)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """``get --json``'s ``progress`` (the fields that apply: no ``total`` or ``fraction``
        for an open-ended sweep, no ``best`` before a value, no ETA before one is known)."""
        data: dict[str, Any] = {"done": self.done}
        if self.total:
            data["total"] = self.total
        data["running"] = self.running
        data["failed"] = self.failed
        if self.fraction is not None:
            data["fraction"] = round(self.fraction, 4)
        if self.eta_seconds is not None:
            data["eta_seconds"] = round(self.eta_seconds, 1)
        if self.best is not None:
            data["best"] = {"metric": self.metric, **self.best.to_dict()}
            data["best"]["ranked_by"] = ranked_by(self.over_steps)
        return data


def trial_line(index: int, status: str, value: object, progress: SweepProgress) -> str:
    """The line a sweep logs when a trial ends: ``trial 3 succeeded (7/20) loss=0.31 (best
    0.29, trial 4) eta 1m20s``: the trial's index and status first (as before), then the
    sweep's trials done of its total (this one included), its value, the best so far and the
    ETA while trials run."""
    line = f"trial {index} {status} ({progress.count()})"
    number = finite(value)
    if progress.metric and number is not None:
        line += f" {progress.metric}={display(number)}"
    if progress.best is not None:
        line += f" (best {display(progress.best.value)}, trial {progress.best.trial})"
    if progress.going and progress.eta_seconds is not None:
        line += f" eta {format_eta(progress.eta_seconds)}"
    return line


@dataclass(frozen=True)
class JobProgress:
    """How far a job is by its own ``log_progress`` calls: the fraction and the ETA."""

    fraction: float
    eta_seconds: float | None = None

    def description(self) -> str:
        text = f"{self.fraction:.0%} done"
        if self.eta_seconds is not None and self.fraction < 1:
            text += f"; ETA {format_eta(self.eta_seconds)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"fraction": round(self.fraction, 4)}
        if self.eta_seconds is not None:
            data["eta_seconds"] = round(self.eta_seconds, 1)
        return data


class SweepTracker:
    """What a sweep's progress is computed from, fed as trials end: their durations (measured
    by the caller: no clock here), how many failed, and the best value so far."""

    def __init__(
        self, metric: str | None, maximize: bool, over_steps: str | None, concurrency: int
    ) -> None:
        self.metric = metric
        self.maximize = maximize
        self.over_steps = over_steps
        self.concurrency = concurrency
        self.durations: list[float] = []
        self.failed = 0
        self.best: Best | None = None

    def resumed(self, records: Iterable[Any]) -> None:
        """Count what an earlier run of the sweep finished (`TrialRecord`s): failures and the
        best value (their durations are not known: the ETA learns from this run's trials)."""
        for record in records:
            self.finished(record.index, str(record.status), record.value, record.params, None)

    def finished(
        self,
        index: int,
        status: str,
        value: object,
        params: Mapping[str, Any],
        duration: float | None,
    ) -> None:
        if duration is not None:
            self.durations.append(duration)
        if status == Status.FAILED:
            self.failed += 1
        number = finite(value)
        if number is not None and status == Status.SUCCEEDED:  # as the study's best
            candidate = Best(number, index, dict(params))
            if candidate.better_than(self.best, self.maximize):
                self.best = candidate

    def progress(
        self, done: int, total: int | None, running_elapsed: Sequence[float]
    ) -> SweepProgress:
        """The progress with ``done`` trials ended of ``total``, and trials running for
        ``running_elapsed`` seconds each."""
        remaining = (total - done) if total else len(running_elapsed)
        eta = sweep_eta(self.durations, remaining, running_elapsed, self.concurrency)
        return SweepProgress(
            done=done,
            total=total,
            running=len(running_elapsed),
            failed=self.failed,
            metric=self.metric,
            best=self.best,
            eta_seconds=eta,
            over_steps=self.over_steps,
        )
