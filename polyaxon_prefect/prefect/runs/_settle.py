"""How a run that ended while its Prefect server was gone is written once a server is back.

The CLI heard the run's result without the server (`_cli._server_gone`); the flow run, its ops'
task runs and its record were never written. `settlement` turns that result's record into
plain API payloads: the flow run's final state (the one its own end would have set, through
`_states`), each op's task run's state by its name, and the record as the run's ``-record``
artifact with its ops or trials in it (its reports were not published either). The session's
journal keeps them (`Session.settle_later`), and the next command on a server of the same
database writes them (`runtime._reaper.settle`) instead of marking the run crashed, so ``get``,
``ls`` and ``statuses`` then tell what the CLI printed.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.prefect._artifacts import artifact_key
from polyaxon_prefect.prefect._job_flow import flow_name
from polyaxon_prefect.prefect._states import state_for_status
from polyaxon_prefect.prefect.runs._run_record import RECORD_SUFFIX, _record_markdown

__all__ = ["settlement"]


def _state(status: str, message: str) -> dict[str, Any]:
    state = state_for_status(status, message or status)
    return {"type": state.type.value, "name": state.name, "message": state.message}


def settlement(record: dict[str, Any]) -> dict[str, Any]:
    """The payloads that write ``record`` (a top-level run's, its ``flow_run_id`` set)."""
    name = str(record.get("name") or "")
    ops = record.get("ops")
    tasks = {
        flow_name(op): _state(str(values["status"]), str(values.get("message") or ""))
        for op, values in (ops.items() if isinstance(ops, dict) else ())
        if isinstance(values, dict) and values.get("status")
    }
    return {
        "flow_run": record["flow_run_id"],
        "state": _state(str(record["status"]), str(record.get("message") or "")),
        "tasks": tasks,
        "artifacts": [
            {
                "key": artifact_key(name, RECORD_SUFFIX),
                "type": "markdown",
                "description": f"record of `{name}` (run {record.get('uuid')})",
                "data": _record_markdown(record, whole=True),
            }
        ],
    }
