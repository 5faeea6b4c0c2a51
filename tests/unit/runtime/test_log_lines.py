"""What ``logs`` shows of a run's lines: the op and replica a line is of, the selection
``--op``/``--replica``/``--tail`` make, the files a run keeps, and how ``-f`` exits."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.runtime import (
    LogLine,
    exit_code,
    line_record,
    read_log_files,
    select_lines,
    shown_line,
)

LINES = [
    LogLine("dag `pipe`: 3 ops"),
    LogLine("[master-0] loss 0.1", op="train"),
    LogLine("[worker-1] loss 0.2", op="train"),
    LogLine("hello", op="nested/a"),
    LogLine("hi", op="nested-2"),
    LogLine("trial line", op="tune/trial-1"),
]


def test_an_op_selects_its_own_lines_and_those_of_what_it_runs_not_a_namesake_prefix():
    assert [line.message for line in select_lines(LINES, op="nested")] == ["hello"]
    assert [line.op for line in select_lines(LINES, op="tune")] == ["tune/trial-1"]
    assert select_lines(LINES, op="missing") == []


def test_a_replica_selects_its_prefixed_lines_and_is_shown_without_the_prefix():
    chosen = select_lines(LINES, replica="worker-1")
    assert [line.message for line in chosen] == ["[worker-1] loss 0.2"]
    assert shown_line(chosen[0], replica="worker-1") == "[train] loss 0.2"
    assert shown_line(chosen[0]) == "[train] [worker-1] loss 0.2"
    assert LogLine("[not a replica] x").replica is None


@pytest.mark.parametrize(("tail", "count"), [(None, 6), (2, 2), (0, 0), (99, 6)])
def test_tail_keeps_the_last_lines(tail: int | None, count: int):
    chosen = select_lines(LINES, tail=tail)
    assert chosen == LINES[len(LINES) - count :]


def test_a_json_record_has_the_fields_scripts_filter_on():
    record = line_record(LINES[2])
    assert record == {
        "timestamp": None,
        "level": 20,
        "op": "train",
        "replica": "worker-1",
        "message": "[worker-1] loss 0.2",
    }


def test_follow_exits_as_run_does():
    assert exit_code("succeeded") == 0
    assert [exit_code(s) for s in ("failed", "stopped", "upstream_failed", "skipped")] == [1] * 4


def test_a_run_directorys_files_job_log_first_then_each_replica_prefixed(tmp_path: Path):
    run = tmp_path / "default" / "abc123"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "worker-0.log").write_text("w0\n", encoding="utf-8")
    (run / "logs" / "master-0.log").write_text("m0 a\nm0 b\n", encoding="utf-8")
    (run / "logs" / "job.log").write_text("init\n", encoding="utf-8")
    child = tmp_path / "default" / "def456"
    (child / "logs").mkdir(parents=True)
    (child / "logs" / "job.log").write_text("op line\n", encoding="utf-8")

    lines = read_log_files(run, {"train": "def456", "gone": "0000"}, artifacts_root=tmp_path)

    assert [shown_line(line) for line in lines] == [
        "init",
        "[master-0] m0 a",
        "[master-0] m0 b",
        "[worker-0] w0",
        "[train] op line",
    ]
    assert read_log_files(tmp_path / "nothing") == []
