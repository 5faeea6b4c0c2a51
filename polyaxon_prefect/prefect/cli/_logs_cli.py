"""``polyaxon-prefect logs`` and ``statuses``: a run's lines and status history, read back from
Prefect's API by any process (like ``polyaxon ops logs`` / ``polyaxon ops statuses``).

``logs`` reads the lines of the run and of every run below it (a DAG's ops, a sweep's trials)
from the API; when the server has none (its database was reset, a new server, API logging
off), it reads the files the run kept under its run directory and says so in one stderr line.
``-f`` and ``-w`` follow the run until it ends and exit as ``run`` does: 0 when it succeeded,
1 for any other end (``-f`` of a run only its files know prints them and exits 0: a run's
status is not in its files).

Light at import: the parsers are built before Prefect is imported; the commands import it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING

from polyaxon_prefect._cli_args import Subparsers, add_run_arg, text_value, whole_number
from polyaxon_prefect.exceptions import PolyaxonPrefectError

if TYPE_CHECKING:
    from pathlib import Path

    from polyaxon_prefect.client.runs._statuses import StatusChange

__all__ = ["add_logs_parsers", "cmd_logs", "cmd_statuses"]

_REPLICA_NAME = re.compile(r"^[a-z]+-\d+$")


def _replica(text: str) -> str:
    """``--replica``: a replica's name as its lines are prefixed (``master-0``, ``worker-1``)."""
    if not _REPLICA_NAME.match(text):
        raise argparse.ArgumentTypeError(
            f"not a replica name: {text!r} (a replica type and its index, e.g. worker-1)"
        )
    return text


def add_logs_parsers(subparsers: Subparsers) -> None:
    logs = subparsers.add_parser(
        "logs", help="a run's log lines (its ops', trials' and replicas' too), from any process"
    )
    add_run_arg(logs)
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="show new lines as they come until the run ends; exit 0 if it succeeded, else 1",
    )
    logs.add_argument(
        "--op",
        type=text_value,
        default=None,
        metavar="NAME",
        help="only this DAG op's lines (and what it runs); `nested/a` for an op of a nested "
        "DAG, `trial-3` for a sweep's trial",
    )
    logs.add_argument(
        "--replica",
        type=_replica,
        default=None,
        metavar="NAME",
        help="only this replica's lines (e.g. worker-1), without their `[worker-1] ` prefix",
    )
    logs.add_argument(
        "--tail", type=whole_number(0), default=None, metavar="N", help="only the last N lines"
    )
    logs.add_argument(
        "--files",
        action="store_true",
        help="read the files the run kept (every line, where Prefect got at most "
        "$POLYAXON_PREFECT_LOG_LINES_PER_SECOND of a flood) instead of Prefect's logs",
    )
    logs.add_argument(
        "--json", action="store_true", help="one JSON object a line (timestamp, op, message...)"
    )
    statuses = subparsers.add_parser("statuses", help="a run's status changes, with their times")
    add_run_arg(statuses)
    statuses.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="show each change as it happens until the run ends; exit 0 if it succeeded, else 1",
    )
    statuses.add_argument("--json", action="store_true", help="one JSON object a change")


# ----------------------------------------------------------------------------- logs


def _from_files(
    args: argparse.Namespace, run_path: Path, children: dict[str, str] | None, why: str
) -> int:
    from polyaxon_prefect.client.logs._logs_verb import Printer, check_op, line_ops
    from polyaxon_prefect.runtime import read_log_files

    lines = read_log_files(run_path, children)
    check_op(args.op, args.run, [*(children or {}), *line_ops(lines)])
    print(f"{why}: the lines below are from the files under {run_path}/logs", file=sys.stderr)
    Printer(args)(lines)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from polyaxon_prefect.client.logs._logs_verb import FromFiles, Printer, show_logs
    from polyaxon_prefect.prefect.cli._runs_cli import _read, find_run
    from polyaxon_prefect.prefect.runs._runs import PrefectApi, api_client
    from polyaxon_prefect.runtime import find_run_path

    try:
        api, run = find_run(args.run)
    except PolyaxonPrefectError:
        path = find_run_path(args.run)
        if path is None:
            raise
        why = "--files" if args.files else f"the Prefect server does not know run {args.run}"
        return _from_files(args, path, None, why)
    with api_client(api) as client:  # the thin client's `logs` is this, over its own HTTP
        shown = _read(api, lambda: show_logs(PrefectApi(client), run, args, Printer(args)))
    if isinstance(shown, FromFiles):
        return _from_files(args, shown.path, shown.children, shown.why)
    return shown


# ----------------------------------------------------------------------------- statuses


def _print_change(args: argparse.Namespace, change: StatusChange) -> None:
    text = json.dumps(change.record(), default=str) if args.json else change.line()
    print(text, flush=True)


def cmd_statuses(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect.cli._runs_cli import _read, find_run
    from polyaxon_prefect.prefect.runs._logs import status_history, watch_statuses
    from polyaxon_prefect.runtime import exit_code

    api, run = find_run(args.run)
    if args.watch:
        status = _read(
            api, lambda: watch_statuses(api, run["id"], lambda c: _print_change(args, c))
        )
        return exit_code(status)
    for change in _read(api, lambda: status_history(api, run["id"])):
        _print_change(args, change)
    return 0
