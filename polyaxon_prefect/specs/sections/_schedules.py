"""``schedule``: run an operation on a cron, every N seconds, or once at a date (spec 3).

Field sets follow Polyaxon's ``V1CronSchedule``, ``V1IntervalSchedule`` and
``V1DateTimeSchedule``; ``kind`` is mandatory in YAML (discriminated union).
"""

from datetime import datetime, timedelta
from typing import Annotated, Literal, Self

from pydantic import Field, StrictStr, field_validator, model_validator

from polyaxon_prefect.specs._base import BaseSpec, is_template
from polyaxon_prefect.specs._or_ref import BoolOrRef, PositiveIntOrRef
from polyaxon_prefect.specs._templated import Templated

__all__ = [
    "CRON_MACROS",
    "CronSchedule",
    "DateTimeSchedule",
    "IntervalSchedule",
    "Schedule",
]

CRON_MACROS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
"""Shorthands that cron libraries (and Prefect's cron schedules) accept in place of fields."""


def _check_window(start: object, end: object) -> None:
    if isinstance(start, datetime) and isinstance(end, datetime):
        try:
            ordered = end > start
        except TypeError:  # one is timezone-aware and the other is not
            return
        if not ordered:
            raise ValueError(
                f"endAt ({end.isoformat()}) must be after startAt ({start.isoformat()})"
            )


class _Window(BaseSpec):
    start_at: Templated[datetime] | None = None
    end_at: Templated[datetime] | None = None
    max_runs: PositiveIntOrRef | None = None
    depends_on_past: BoolOrRef | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        _check_window(self.start_at, self.end_at)
        return self


class CronSchedule(_Window):
    """Start a run at every time matching ``cron`` (5 fields, or 6 with seconds)."""

    kind: Literal["cron"] = "cron"
    cron: StrictStr

    @field_validator("cron")
    @classmethod
    def _cron_fields(cls, value: str) -> str:
        text = value.strip()
        if is_template(text) or text.lower() in CRON_MACROS:
            return text
        parts = text.split()
        if len(parts) not in (5, 6):
            raise ValueError(
                f"a cron expression has 5 fields (minute hour day month weekday) or 6 with "
                f"seconds, got {len(parts)} in {value!r}"
            )
        return text


class IntervalSchedule(_Window):
    """Start a run every ``frequency`` (seconds in YAML, or a duration such as ``PT1H``)."""

    kind: Literal["interval"] = "interval"
    frequency: Templated[timedelta]

    @field_validator("frequency")
    @classmethod
    def _positive(cls, value: object) -> object:
        if isinstance(value, timedelta) and value.total_seconds() <= 0:
            raise ValueError(
                f"an interval frequency must be positive, got {value.total_seconds():g} seconds"
            )
        return value

    @property
    def seconds(self) -> float | None:
        """The frequency in seconds, or None while it is still a template."""
        return self.frequency.total_seconds() if isinstance(self.frequency, timedelta) else None


class DateTimeSchedule(BaseSpec):
    """Start one run at ``startAt``."""

    kind: Literal["datetime"] = "datetime"
    start_at: Templated[datetime]


Schedule = Annotated[
    CronSchedule | IntervalSchedule | DateTimeSchedule, Field(discriminator="kind")
]
"""Any schedule, chosen by its ``kind``."""
