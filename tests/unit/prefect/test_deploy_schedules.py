"""Polyaxon schedules as what a Prefect deployment holds (pure), warnings included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.prefect.deployments._deploy_schedules import deployment_schedule
from polyaxon_prefect.specs import Schedule

_ADAPTER: TypeAdapter = TypeAdapter(Schedule)


def _schedule(data: dict) -> object:
    return _ADAPTER.validate_python(data)


def test_cron_maps_and_says_what_prefect_cannot_hold() -> None:
    plain = deployment_schedule(_schedule({"kind": "cron", "cron": "0 2 * * *"}))
    assert plain.schedule == {"cron": "0 2 * * *"} and plain.warnings == ()
    windowed = deployment_schedule(
        _schedule(
            {"kind": "cron", "cron": "@daily", "maxRuns": 3, "startAt": "2030-01-01T00:00:00Z"}
        )
    )
    assert windowed.schedule == {"cron": "@daily"}
    [warning] = windowed.warnings
    assert "startAt, maxRuns" in warning


def test_interval_anchored_or_as_a_rule_with_an_end() -> None:
    anchored = deployment_schedule(
        _schedule({"kind": "interval", "frequency": 600, "startAt": "2030-01-01T00:00:00Z"})
    )
    assert anchored.schedule == {"interval": 600.0, "anchor_date": "2030-01-01T00:00:00+00:00"}
    bounded = deployment_schedule(
        _schedule(
            {
                "kind": "interval",
                "frequency": 60,
                "startAt": "2030-01-01T00:00:00Z",
                "endAt": "2030-01-02T00:00:00Z",
                "maxRuns": 5,
                "dependsOnPast": True,
            }
        )
    )
    assert bounded.schedule == {
        "rrule": "DTSTART:20300101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=60;"
        "UNTIL=20300102T000000Z;COUNT=5"
    }
    assert bounded.one_at_a_time


def test_a_rule_the_rrule_library_reads_gives_the_runs_polyaxon_would() -> None:
    from dateutil.rrule import rrulestr

    start = datetime(2030, 1, 1, tzinfo=UTC)
    bounded = deployment_schedule(
        _schedule({"kind": "interval", "frequency": 30, "startAt": start.isoformat(), "maxRuns": 3})
    )
    assert bounded.schedule is not None
    runs = list(rrulestr(bounded.schedule["rrule"]))
    assert runs == [start, start + timedelta(seconds=30), start + timedelta(seconds=60)]


def test_datetime_is_one_run_at_that_time() -> None:
    once = deployment_schedule(_schedule({"kind": "datetime", "startAt": "2030-05-01T10:00:00Z"}))
    assert once.schedule is None
    assert once.run_at == datetime(2030, 5, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "cron", "cron": "{{ when }}"},
        {"kind": "interval", "frequency": "{{ every }}"},
        {"kind": "datetime", "startAt": "{{ at }}"},
    ],
)
def test_a_template_left_in_a_schedule_is_refused(data: dict) -> None:
    with pytest.raises(ValueError, match="is still a template"):
        deployment_schedule(_schedule(data))
