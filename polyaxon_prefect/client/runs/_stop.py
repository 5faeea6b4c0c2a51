"""``stop RUN`` once the run is found, the one code path of both ways in: the flow run is set
Cancelling, as ``prefect flow-run cancel`` and the UI's Cancel do (not forced: the server's
rules apply, so a scheduled run that no process holds yet goes straight to Cancelled), and the
outcome is printed. Whatever runs it then stops it: a process of ours watches its top-level
flow run and stops its jobs, replicas, DAG ops and trials (`prefect.runs._stop_watch`); a
worker kills the process it started. The run and its children end Cancelled (``stopped``).

Only a top-level flow run is cancelled: that is the one its process watches (a DAG's op or a
sweep's trial is a child flow run in the same process, stopped with its root). A child given
by its id is refused with the root's id, rather than left Cancelling with nobody to end it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.runs._status_words import DONE_STATUSES, status_of
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["STOP_REASON", "request_cancel", "stop_run"]

STOP_REASON = "stopped by `polyaxon-prefect stop`"
"""The run's stop reason, and the message of the Cancelling state that `stop` sets."""
_NESTING = 50
"""Nesting is shallow: a parent chain longer than this is a loop, not a run."""


def _root_of(api: Api, run: dict[str, Any]) -> dict[str, Any]:
    """The top-level flow run that ``run`` is a child of (``run`` itself when it is one)."""
    for _ in range(_NESTING):
        parent_task = run.get("parent_task_run_id")
        task = api.get(f"/task_runs/{parent_task}") if parent_task else None
        parent = (task or {}).get("flow_run_id")
        found = api.get(f"/flow_runs/{parent}") if parent else None
        if found is None:
            break
        run = found
    return run


def request_cancel(api: Api, flow_run_id: str) -> str:
    """Set flow run ``flow_run_id`` Cancelling; return its Polyaxon status after (``stopping``,
    or ``stopped`` when the server cancelled it at once: nothing ran it yet).

    A child run, or a transition the server refuses, is one `PolyaxonPrefectError` line."""
    run = api.get(f"/flow_runs/{flow_run_id}")
    if run is None:
        raise PolyaxonPrefectError(f"no run with the id, name or uuid `{flow_run_id}`")
    root = _root_of(api, run)
    if root["id"] != run["id"]:
        raise PolyaxonPrefectError(
            f"run `{run['name']}` ({run['id']}) is an op or trial of run `{root['name']}` "
            f"({root['id']}): stop that run (`polyaxon-prefect stop {root['id']}`)"
        )
    state = {
        "type": "CANCELLING",
        "name": "Cancelling",
        "message": STOP_REASON,
        # as Prefect's client sends it: the server tells a retried request by its transition
        "state_details": {"flow_run_id": run["id"], "transition_id": str(uuid.uuid4())},
    }
    result = api.post(f"/flow_runs/{run['id']}/set_state", {"state": state, "force": False})
    reason = (result.get("details") or {}).get("reason")
    answered = result.get("state")
    if result.get("status") == "ABORT" or not answered:
        why = reason or "no reason given"
        raise PolyaxonPrefectError(f"the Prefect server refused to stop run {run['id']}: {why}")
    status = status_of(answered["type"], answered.get("name"))
    if result.get("status") == "REJECT" and answered["type"] not in ("CANCELLING", "CANCELLED"):
        why = reason or f"it is {status}"
        raise PolyaxonPrefectError(f"the Prefect server refused to stop run {run['id']}: {why}")
    return status


def _print(as_json: bool, line: str, payload: dict[str, Any]) -> None:
    print(json.dumps(payload, indent=2, default=str) if as_json else line)


def stop_run(api: Api, run: Mapping[str, Any], *, as_json: bool) -> int:
    """Stop ``run`` (as `get` shows it) and say so: the line, or under ``--json`` its object."""
    shown = f"run `{run['name']}` ({run['id']})"
    if run["status"] in DONE_STATUSES:
        _print(
            as_json,
            f"{shown} is already {run['status']}: nothing to stop",
            {"id": run["id"], "name": run["name"], "status": run["status"], "stopping": False},
        )
        return 0
    status = request_cancel(api, run["id"])
    if status == "stopped":
        line = f"stopped {shown}: it was {run['status']}, nothing ran it yet"
    else:
        line = (
            f"stopping {shown}: its processes, ops and trials stop within seconds "
            f"(`polyaxon-prefect get {run['id']}` shows `stopped` then)"
        )
    payload = {"id": run["id"], "name": run["name"], "status": status, "stopping": True}
    _print(as_json, line, payload)
    return 0
