"""``polyaxon-prefect stop RUN``: stop a run through Prefect, whoever started it (like
``polyaxon ops stop``).

The run's flow run is set to Cancelling, as ``prefect flow-run cancel`` and the UI's Cancel do
(not forced: the server's rules apply, so a scheduled run that no process holds yet goes
straight to Cancelled). Whatever runs it then stops it: a process of ours (``run``, a hook, a
deployment run) watches its top-level flow run and stops its jobs, replicas, DAG ops and
trials (`polyaxon_prefect.prefect.runs._stop_watch`); a worker kills the process it started. The
run and its children end Cancelled, which every place shows as ``stopped``.

Light at import: the parser is built before Prefect is imported; the command imports it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from polyaxon_prefect._cli_args import text_value
from polyaxon_prefect.specs import Status

__all__ = ["FINAL_STATUSES", "add_stop_parser", "cmd_stop"]

FINAL_STATUSES = frozenset(
    {Status.SUCCEEDED, Status.FAILED, Status.STOPPED, Status.SKIPPED, Status.UPSTREAM_FAILED}
)
"""A run in one of these has ended: there is nothing to stop."""


def add_stop_parser(subparsers: Any) -> None:
    stop = subparsers.add_parser(
        "stop",
        help="stop a run (its processes, DAG ops and trials), whoever started it",
    )
    stop.add_argument(
        "run",
        type=text_value,
        help="the flow run's id or name, or the Polyaxon run uuid that `run` printed",
    )
    stop.add_argument("--json", action="store_true")


def _print(args: argparse.Namespace, line: str, payload: dict[str, Any]) -> None:
    print(json.dumps(payload, indent=2, default=str) if args.json else line)


def cmd_stop(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect.cli._runs_cli import find_run
    from polyaxon_prefect.prefect.runs._stop import request_cancel

    api, run = find_run(args.run)
    shown = f"run `{run['name']}` ({run['id']})"
    if run["status"] in FINAL_STATUSES:
        _print(
            args,
            f"{shown} is already {run['status']}: nothing to stop",
            {"id": run["id"], "name": run["name"], "status": run["status"], "stopping": False},
        )
        return 0
    status = request_cancel(api, run["id"])
    if status == Status.STOPPED:
        line = f"stopped {shown}: it was {run['status']}, nothing ran it yet"
    else:
        line = (
            f"stopping {shown}: its processes, ops and trials stop within seconds "
            f"(`polyaxon-prefect get {run['id']}` shows `stopped` then)"
        )
    _print(
        args,
        line,
        {"id": run["id"], "name": run["name"], "status": status, "stopping": True},
    )
    return 0
