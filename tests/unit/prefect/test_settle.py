"""What the next command writes for a run that ended while its server was gone (`_settle`):
plain API payloads, read back by ``get`` as the run's own end would have been."""

from __future__ import annotations

from uuid import uuid4

from prefect.client.schemas.objects import Artifact, FlowRun

from polyaxon_prefect.prefect.runs._runs import read_details
from polyaxon_prefect.prefect.runs._settle import settlement


def test_a_dag_that_ended_without_its_server_settles_with_its_ops_true_states() -> None:
    why = "stopped before it started: the Prefect server at http://127.0.0.1:1 stopped answering"
    record = {
        "status": "stopped",
        "uuid": "u1",
        "name": "chain",
        "message": "dag `chain` stopped: 1 stopped, 1 succeeded",
        "flow_run_id": "f1",
        "kind": "dag",
        "ops": {
            "a": {"status": "succeeded", "outputs": {"answer": 42}, "message": "succeeded"},
            "b": {"status": "stopped", "outputs": {}, "message": why},
        },
    }

    settled = settlement(record)

    assert settled["flow_run"] == "f1"
    assert settled["state"] == {
        "type": "CANCELLED",
        "name": "Cancelled",
        "message": "dag `chain` stopped: 1 stopped, 1 succeeded",
    }
    assert settled["tasks"] == {
        "a": {"type": "COMPLETED", "name": "Completed", "message": "succeeded"},
        "b": {"type": "CANCELLED", "name": "Cancelled", "message": why},
    }
    [artifact] = settled["artifacts"]
    assert artifact["key"] == "chain-record"
    assert artifact["description"] == "record of `chain` (run u1)"
    # its reports were never published: the record holds the ops, and `get` reads them there
    published = Artifact(key=artifact["key"], type="markdown", data=artifact["data"])
    details = read_details(None, FlowRun(flow_id=uuid4(), name="chain"), [published])
    assert details["ops"] == record["ops"] and details["uuid"] == "u1"
