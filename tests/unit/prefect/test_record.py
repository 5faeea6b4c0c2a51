"""What a run records for ``restart``: the resolved operation loads back as the same operation,
the params given are kept, and no secret is written (a storage URL's password is masked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyaxon_prefect.dag import OpRecord
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect._request import OpRequest, SweepOptions
from polyaxon_prefect.prefect.runs._record import (
    OPERATION_FILE,
    OpsFile,
    read_ops,
    read_record,
    record_ops,
    record_run,
)
from polyaxon_prefect.runtime import new_run_context
from polyaxon_prefect.specs import Status

COMPONENT = (
    "version: 1.1\nkind: component\nname: leaf\n"
    "inputs: [{name: x, type: float, value: 0.5, isOptional: true}, {name: tag, type: str}]\n"
    "run: {kind: job, container: {command: [python, -c, 'print({{ x }})']}}\n"
)


def test_the_record_loads_back_as_the_same_operation(tmp_path: Path) -> None:
    (tmp_path / "leaf.yaml").write_text(COMPONENT)
    (tmp_path / "op.yaml").write_text(
        "version: 1.1\nkind: operation\nname: op\npathRef: leaf.yaml\nparams: {x: {value: 0.25}}\n"
    )
    loaded = load_polyaxonfile(tmp_path / "op.yaml", params={"tag": "{{ not rendered }}"})
    secret = "postgresql+psycopg2://user:s3cret@db/optuna"
    request = OpRequest(loaded=loaded, sweep=SweepOptions(storage=secret))
    context = new_run_context("op", "proj", artifacts_root=tmp_path / "root")
    record_run(request, context)

    text = (context.run_path / "run.json").read_text()
    assert "s3cret" not in text
    record = read_record(context.run_path)
    assert record.storage == "postgresql+psycopg2://user:***@db/optuna"
    assert record.params == {"tag": "{{ not rendered }}"}
    assert record.base_dir == str(tmp_path)
    assert (record.kind, record.op, record.uuid) == ("job", "op", context.uuid)

    (tmp_path / "leaf.yaml").unlink()  # the record needs no file it came from
    again = load_polyaxonfile(context.run_path / OPERATION_FILE, params=dict(record.params))
    assert again.operation.to_dict() == loaded.operation.to_dict()
    assert again.params == loaded.params


def test_ops_round_trip_and_a_run_without_a_record_is_one_line(tmp_path: Path) -> None:
    records = {
        "a": OpRecord(name="a", status=Status.SUCCEEDED, uuid="ua", outputs={"v": 1.5}),
        "b": OpRecord(name="b", status=Status.FAILED, uuid="ub", message="exit 3"),
    }
    record_ops(tmp_path, records, {"a": "ua"})
    assert json.loads((tmp_path / "ops.json").read_text())["a"]["reused_from"] == "ua"
    back = read_ops(tmp_path)
    assert back == records
    assert read_ops(tmp_path / "none") is None
    with pytest.raises(PolyaxonPrefectError, match="recorded no operation"):
        read_record(tmp_path)


def test_the_ops_file_written_as_ops_end_is_the_file_written_at_once(tmp_path: Path) -> None:
    """`OpsFile` makes each op's JSON once; each of its writes is the text `record_ops`
    writes for the same records, byte for byte (a message with a newline, a reused op)."""
    records = {
        "a": OpRecord(name="a", status=Status.SUCCEEDED, uuid="ua", outputs={"v": [1, 2]}),
        "b": OpRecord(name="b", status=Status.FAILED, message="line 1\nline 2", tags=("t",)),
        "c": OpRecord(name="c", status=Status.SKIPPED, globals={"run_path": tmp_path}),
    }
    live, whole = tmp_path / "live", tmp_path / "whole"
    live.mkdir(), whole.mkdir()
    ops_file = OpsFile(live)
    ops_file.write({}, {})
    assert (live / "ops.json").read_text() == "{}"
    for count in range(1, 4):  # as the ops end, then once more with the same records
        ended = dict(list(records.items())[:count])
        ops_file.write(ended, {"a": "earlier"})
        record_ops(whole, ended, {"a": "earlier"})
        assert (live / "ops.json").read_text() == (whole / "ops.json").read_text()
    ops_file.write(records, {})  # `a` no longer reused: its text is made again
    record_ops(whole, records, {})
    assert (live / "ops.json").read_text() == (whole / "ops.json").read_text()
    assert read_ops(live) == read_ops(whole)
