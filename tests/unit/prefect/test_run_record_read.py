"""A run's record read back from its artifacts (Prefect's own artifact and flow-run models, no
server): the record artifact wins with its JSON types; a job table of an older version (every
value as text) still reads as it did; a name's note says how many others have it."""

from __future__ import annotations

import json
from uuid import uuid4

from prefect.client.schemas.objects import Artifact, FlowRun

from polyaxon_prefect.prefect.runs._run_record import _record_markdown, read_record
from polyaxon_prefect.prefect.runs._runs import name_note, read_details


def _table(rows: list[dict[str, object]]) -> Artifact:
    return Artifact(key="train-run", type="table", data=json.dumps(rows), description="(run u1)")


def test_the_record_artifact_wins_with_its_types() -> None:
    record = {
        "status": "succeeded",
        "uuid": "u1",
        "name": "train",
        "outputs": {"loss": 0.25},
        "metrics": {"loss": 0.5, "acc": 0.7},
        "message": "succeeded",
        "cached": False,
        "kind": "pytorchjob",
        "params": {"n": 3, "flag": True, "cfg": {"a": 1}, "word": "1.5"},
        "ops": {"not": "stored"},
    }
    artifact = Artifact(key="train-record", type="markdown", data=_record_markdown(record))
    old_table = _table([{"kind": "output", "name": "loss", "value": "9"}])
    flow_run = FlowRun(flow_id=uuid4(), name="train")

    assert read_record([artifact]) == {k: v for k, v in record.items() if k != "ops"}
    details = read_details(None, flow_run, [artifact, old_table])
    assert details["outputs"] == {"loss": 0.25} and details["params"] == record["params"]
    assert details["metrics"] == {"loss": 0.5, "acc": 0.7} and details["message"] == "succeeded"


def test_a_job_table_of_an_older_version_reads_as_it_did() -> None:
    rows = [
        {"kind": "run", "name": "uuid", "value": "u1"},
        {"kind": "param", "name": "x", "value": "0.25"},
        {"kind": "output", "name": "loss", "value": "0.0025"},
        {"kind": "metric", "name": "acc", "value": "0.7"},
        {"kind": "run", "name": "gpu_hours", "value": "0.5"},
    ]
    details = read_details(None, FlowRun(flow_id=uuid4(), name="train"), [_table(rows)])

    assert details["uuid"] == "u1" and details["metrics"] == {"acc": 0.7}
    assert details["params"] == {"x": "0.25"} and details["gpu_hours"] == 0.5


def test_a_name_note_counts_the_other_runs() -> None:
    assert name_note("nightly", 3, "abc") == (
        "3 other runs are named nightly; the latest is abc (ls -q name:nightly to see them)"
    )
    assert name_note("nightly", 1, "abc").startswith("1 other run is named nightly;")
