"""A DAG's or a sweep's record of the runs it started leads `logs` from its directory to every
op's and trial's lines, nested runs included, when no server has them."""

from __future__ import annotations

from pathlib import Path

from polyaxon_prefect.runtime import ChildIndex, read_log_files, record_child, shown_line
from polyaxon_prefect.runtime.logs._log_files import recorded_children


def _run(root: Path, uuid: str, text: str = "") -> Path:
    path = root / "default" / uuid
    (path / "logs").mkdir(parents=True)
    if text:
        (path / "logs" / "job.log").write_text(text, encoding="utf-8")
    return path


def test_recorded_runs_are_read_under_their_op_path_nested_ones_too(tmp_path: Path):
    dag = _run(tmp_path, "dag1")
    _run(tmp_path, "op1", "first line\n")
    nested = _run(tmp_path, "nest1")
    _run(tmp_path, "op2", "inner line\n")
    record_child(dag, "first", "op1")
    record_child(dag, "nested", "nest1")
    record_child(dag, "lost", "gone")  # its directory was removed: no lines, no error
    record_child(nested, "a", "op2")
    with (dag / "logs" / "runs.jsonl").open("a") as index:
        index.write("not json\n")

    lines = read_log_files(dag, artifacts_root=tmp_path)

    assert [shown_line(line) for line in lines] == ["[first] first line", "[nested/a] inner line"]


def test_a_record_that_cannot_be_written_is_no_failure(tmp_path: Path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    record_child(blocked, "op", "x")  # `blocked/logs` cannot be made
    assert read_log_files(blocked) == []


def test_a_kept_index_writes_each_child_when_it_starts_in_order(tmp_path: Path):
    dag = tmp_path / "default" / "dag1"
    index = ChildIndex(dag)
    index.record("first", "op1")
    # on disk as soon as it is recorded: `logs` of a DAG still running finds it
    assert recorded_children(dag) == {"first": "op1"}
    index.record("second", "op2")
    record_child(dag, "third", "op3")  # a one-off record appends to the same file
    index.record("fourth", "op4")
    index.close()
    index.close()  # closing twice is harmless
    assert list(recorded_children(dag).items()) == [
        ("first", "op1"),
        ("second", "op2"),
        ("third", "op3"),
        ("fourth", "op4"),
    ]


def test_a_kept_index_that_cannot_be_written_is_no_failure(tmp_path: Path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    with ChildIndex(blocked) as index:
        index.record("op", "x")
        index.record("op2", "y")
    assert recorded_children(blocked) == {}
