"""A Polyaxon ``schedule`` as what a Prefect deployment can hold (pure: plain data out).

- ``cron``: a cron schedule. Prefect's cron schedules have no start, end or run count, so
  ``startAt``, ``endAt`` and ``maxRuns`` are reported as not applied (a warning, never silence).
- ``interval``: an interval schedule anchored at ``startAt``; with ``endAt`` or ``maxRuns`` an
  RFC 5545 rule instead (``DTSTART`` + ``FREQ=SECONDLY;INTERVAL=n`` + ``UNTIL``/``COUNT``), which
  says all three.
- ``datetime``: one run at ``startAt``: a flow run scheduled for that time when the deployment
  is made (it shows under the deployment's upcoming runs), not a recurring schedule.
- ``dependsOnPast`` (cron, interval): runs of the deployment one at a time (a concurrency limit
  of 1 that queues the next run until the previous ends), and a run after a failed one ends
  skipped, saying which run failed, as Polyaxon documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from polyaxon_prefect.specs import CronSchedule, DateTimeSchedule, Schedule

__all__ = ["DeploymentSchedule", "deployment_schedule"]


@dataclass(frozen=True)
class DeploymentSchedule:
    """What the deployment gets: a recurring ``schedule`` (``{"cron": ...}``,
    ``{"interval": seconds, "anchor_date": ...}`` or ``{"rrule": ...}``, Prefect's field
    names), or ``run_at`` for one scheduled run; ``one_at_a_time`` for ``dependsOnPast``."""

    schedule: dict[str, Any] | None = None
    run_at: datetime | None = None
    one_at_a_time: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _stamp(value: datetime) -> str:
    return _utc(value).strftime("%Y%m%dT%H%M%SZ")


def _moment(name: str, value: datetime | str | None) -> datetime | None:
    """A window's ``startAt``/``endAt`` (``name``), refused while still a template."""
    if value is not None and not isinstance(value, datetime):
        raise ValueError(f"schedule.{name} is still a template: {value!r}")
    return value


def deployment_schedule(schedule: Schedule, *, now: datetime | None = None) -> DeploymentSchedule:
    """The Prefect side of ``schedule`` (a `CronSchedule`, `IntervalSchedule` or
    `DateTimeSchedule`), with a warning for each field Prefect cannot express.

    Raises:
        ValueError: a field is still a ``{{ template }}`` (schedules are read when deploying).
    """
    if isinstance(schedule, DateTimeSchedule):
        at = schedule.start_at
        if not isinstance(at, datetime):
            raise ValueError(f"schedule.startAt is still a template: {at!r}")
        return DeploymentSchedule(run_at=_utc(at))
    start, end = _moment("startAt", schedule.start_at), _moment("endAt", schedule.end_at)
    runs = schedule.max_runs
    if runs is not None and not isinstance(runs, int):
        raise ValueError(f"schedule.maxRuns is still a template: {runs!r}")
    one_at_a_time = bool(schedule.depends_on_past is True)
    if isinstance(schedule, CronSchedule):
        if "{{" in schedule.cron or "{%" in schedule.cron:
            raise ValueError(f"schedule.cron is still a template: {schedule.cron!r}")
        ignored = [
            name
            for name, value in (("startAt", start), ("endAt", end), ("maxRuns", runs))
            if value is not None
        ]
        warnings = (
            (
                f"schedule: Prefect's cron schedules have no {', '.join(ignored)}: the cron "
                "runs from now on, without an end; pause or delete the deployment's schedule "
                "to stop it",
            )
            if ignored
            else ()
        )
        return DeploymentSchedule({"cron": schedule.cron}, None, one_at_a_time, warnings)
    seconds = schedule.seconds
    if seconds is None:
        raise ValueError(f"schedule.frequency is still a template: {schedule.frequency!r}")
    if end is None and runs is None:
        recurring: dict[str, Any] = {"interval": seconds}
        if start is not None:
            recurring["anchor_date"] = _utc(start).isoformat()
        return DeploymentSchedule(recurring, None, one_at_a_time)
    first = start if start is not None else (now or datetime.now(UTC))
    rule = f"FREQ=SECONDLY;INTERVAL={int(seconds)}"
    if end is not None:
        rule += f";UNTIL={_stamp(end)}"
    if runs is not None:
        rule += f";COUNT={runs}"
    warnings = ()
    if seconds != int(seconds):
        warnings = (f"schedule: the frequency {seconds:g}s is rounded to {int(seconds)}s",)
    return DeploymentSchedule(
        {"rrule": f"DTSTART:{_stamp(first)}\nRRULE:{rule}"}, None, one_at_a_time, warnings
    )
