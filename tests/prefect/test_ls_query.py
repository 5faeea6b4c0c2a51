"""``ls -q QUERY --sort SPEC -io --to-csv`` on 200 runs recorded on the test server.

The runs are recorded as finished jobs leave them (flow run + report artifact, through the
client API: `polyaxon_prefect.testing.recorded_runs`), each with this module's own tag so the
other tests' runs on the shared server never count. What a query keeps is checked against the
same selection made here in Python from the recorded values.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import subprocess
import time
import uuid

import pytest

from polyaxon_prefect.prefect.runs._runs import get_run
from polyaxon_prefect.prefect.runs._runs_query import query_runs
from polyaxon_prefect.query import parse_query, parse_sort
from polyaxon_prefect.testing.recorded_runs import RecordedRun, record_runs, sample_runs
from tests.prefect.conftest import cli_in

COUNT = 200
BATCH = f"lsq-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def recorded(prefect_server: str) -> list[RecordedRun]:
    runs = [dataclasses.replace(r, tags=(*r.tags, BATCH)) for r in sample_runs(COUNT)]
    record_runs(prefect_server, runs)
    return runs


def _cli(api: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_in(api, "ls", *args)


def test_query_filters_and_sorts_200_runs_in_under_2_s(
    prefect_server: str, recorded: list[RecordedRun]
) -> None:
    query = f"tags:{BATCH}, status:failed|stopped, metrics.loss:<=0.2, name:%resnet%"
    conditions, keys = parse_query(query), parse_sort("-metrics.loss, name")
    started = time.perf_counter()
    rows = query_runs(prefect_server, conditions, keys, limit=COUNT)
    elapsed = time.perf_counter() - started
    expected = sorted(
        (r for r in recorded if r.status == "failed" and r.metrics["loss"] <= 0.2),
        key=lambda r: r.name,
    )
    expected = [r for r in expected if "resnet" in r.name]
    expected.sort(key=lambda r: -r.metrics["loss"])  # stable: names stay ordered within a loss
    assert [row["name"] for row in rows] == [r.name for r in expected]
    assert len(rows) == 14  # n % 6 == 0 and n % 10 in {0, 2}, for n < 200
    assert {row["uuid"] for row in rows} == {r.uuid for r in expected}
    assert elapsed < 2.0, f"{elapsed:.2f} s"
    for row in rows[:3]:  # the duration `ls` shows, not the seconds the query compared
        shown = get_run(prefect_server, row["id"])
        assert shown is not None and row["duration"] == shown["duration"], row


def test_limit_without_sort_is_the_newest_matches(
    prefect_server: str, recorded: list[RecordedRun]
) -> None:
    rows = query_runs(prefect_server, parse_query(f"tags:{BATCH}, name:~%resnet%"), limit=7)
    assert len(rows) == 7
    assert all(row["name"].startswith("vgg-") for row in rows)
    started = [row["start_time"] for row in rows]
    assert started == sorted(started, reverse=True)


def test_cli_io_to_csv_has_every_column(prefect_server: str, recorded: list[RecordedRun]) -> None:
    done = _cli(
        prefect_server,
        "-q",
        f"tags:{BATCH}, params.lr:0.1, metrics.loss:>=0.8",
        "--sort",
        "metrics.loss,-name",
        "-io",
        "--to-csv",
        "--limit",
        "3",
    )
    assert done.returncode == 0, done.stderr
    table = list(csv.reader(io.StringIO(done.stdout)))
    header, rows = table[0], table[1:]
    assert header == [
        "name",
        "kind",
        "status",
        "started",
        "duration",
        "id",
        "in.arch",
        "in.lr",
        "out.accuracy",
        "out.loss",
    ]
    by_name = {r.name: r for r in recorded}
    # lr 0.1: n % 3 == 0; loss >= 0.8: n % 10 in {8, 9}; ascending loss, then names descending
    wanted = sorted(
        (r for r in recorded if r.params["lr"] == 0.1 and r.metrics["loss"] >= 0.8),
        key=lambda r: r.name,
        reverse=True,
    )
    wanted.sort(key=lambda r: r.metrics["loss"])
    assert [row[0] for row in rows] == [r.name for r in wanted[:3]]
    for row in rows:
        run = by_name[row[0]]
        assert row[1:3] == ["job", run.status]
        assert row[6:] == [
            run.params["arch"],
            "0.1",
            str(run.outputs["accuracy"]),
            str(run.metrics["loss"]),
        ]


def test_cli_bad_query_is_one_located_usage_line(prefect_server: str) -> None:
    done = _cli(prefect_server, "-q", "status:running, metrics.loss:<=zero")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "at 32: `metrics.loss` compares numbers, not `zero`" in lines[0]
    assert "Traceback" not in done.stderr


def test_every_pushed_filter_keeps_what_the_query_keeps(
    prefect_server: str, recorded: list[RecordedRun]
) -> None:
    query = (
        f"tags:{BATCH}, tags:nightly|none, started_at:>2000-01-01, finished_at:<2100-01-01 00:00,"
        " name:res%, status:~stopped"
    )
    rows = query_runs(prefect_server, parse_query(query), parse_sort("name"), limit=COUNT)
    wanted = sorted(r.name for r in recorded if "nightly" in r.tags and r.name.startswith("res"))
    assert [row["name"] for row in rows] == wanted
    assert len(wanted) == 50  # every 4th run is tagged nightly, and those are all resnet-N
