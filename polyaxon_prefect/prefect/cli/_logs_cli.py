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
from collections.abc import Mapping
from typing import Any

from polyaxon_prefect._cli_args import text_value, whole_number
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.specs import DONE_STATUSES

__all__ = ["add_logs_parsers", "cmd_logs", "cmd_statuses"]

_REPLICA_NAME = re.compile(r"^[a-z]+-\d+$")


def _replica(text: str) -> str:
    """``--replica``: a replica's name as its lines are prefixed (``master-0``, ``worker-1``)."""
    if not _REPLICA_NAME.match(text):
        raise argparse.ArgumentTypeError(
            f"not a replica name: {text!r} (a replica type and its index, e.g. worker-1)"
        )
    return text


_RUN_HELP = "the flow run's id or name, or the Polyaxon run uuid that `run` printed"


def add_logs_parsers(subparsers: Any) -> None:
    logs = subparsers.add_parser(
        "logs", help="a run's log lines (its ops', trials' and replicas' too), from any process"
    )
    logs.add_argument("run", type=text_value, help=_RUN_HELP)
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
    statuses.add_argument("run", type=text_value, help=_RUN_HELP)
    statuses.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="show each change as it happens until the run ends; exit 0 if it succeeded, else 1",
    )
    statuses.add_argument("--json", action="store_true", help="one JSON object a change")


# ----------------------------------------------------------------------------- logs


def _children(run: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Op path -> run uuid of every run below ``run`` (as `get` shows it): a DAG's ops (and
    theirs), a sweep's trials."""
    found: dict[str, str] = {}
    for name, op in (run.get("ops") or {}).items():
        if op.get("uuid"):
            found[prefix + name] = op["uuid"]
        found.update(_children(op, f"{prefix}{name}/"))
    for trial in run.get("trials") or []:
        if trial.get("uuid"):
            found[f"{prefix}trial-{trial['index']}"] = trial["uuid"]
    return found


def _op_paths(run: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every op path of ``run`` (its DAG's ops and theirs, a sweep's trials), run or not."""
    paths: list[str] = []
    ops = run.get("ops")
    for name, op in ops.items() if isinstance(ops, Mapping) else ():
        paths.append(prefix + str(name))
        if isinstance(op, Mapping):
            paths += _op_paths(op, f"{prefix}{name}/")
    trials = run.get("trials")
    for trial in trials if isinstance(trials, list) else ():
        if isinstance(trial, Mapping) and "index" in trial:
            paths.append(f"{prefix}trial-{trial['index']}")
    return paths


def _check_op(wanted: str | None, run_name: str, paths: list[str]) -> None:
    """``--op wanted`` names an op of the run (or a DAG above some), else one line naming
    the ops it has: a misspelt op printed nothing and exited 0."""
    if wanted is None or any(p == wanted or p.startswith(wanted + "/") for p in paths):
        return
    if not paths:
        raise PolyaxonPrefectError(f"run {run_name} has no ops: `--op {wanted}` selects nothing")
    shown = ", ".join(dict.fromkeys(paths))
    raise PolyaxonPrefectError(f"run {run_name} has no op `{wanted}`; its ops: {shown}")


def _line_ops(lines: list[Any]) -> list[str]:
    return [line.op for line in lines if getattr(line, "op", None)]


class _Printer:
    """Prints the selected lines; ``--tail`` applies to what is there when it starts."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.first = True

    def __call__(self, lines: list[Any]) -> None:
        from polyaxon_prefect.runtime import line_record, select_lines, shown_line

        args = self.args
        tail = args.tail if self.first else None
        self.first = False
        for line in select_lines(lines, op=args.op, replica=args.replica, tail=tail):
            if args.json:
                print(json.dumps(line_record(line), default=str))
            else:
                print(shown_line(line, replica=args.replica))
        sys.stdout.flush()


def _from_files(
    args: argparse.Namespace, run_path: Any, children: dict[str, str] | None, why: str
) -> int:
    from polyaxon_prefect.runtime import read_log_files

    lines = read_log_files(run_path, children)
    _check_op(args.op, args.run, [*(children or {}), *_line_ops(lines)])
    print(f"{why}: the lines below are from the files under {run_path}/logs", file=sys.stderr)
    _Printer(args)(lines)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from polyaxon_prefect.prefect.cli._runs_cli import _read, find_run
    from polyaxon_prefect.prefect.runs._logs import follow_logs, read_run_logs
    from polyaxon_prefect.runtime import exit_code, find_run_path

    try:
        api, run = find_run(args.run)
    except PolyaxonPrefectError:
        path = find_run_path(args.run)
        if path is None:
            raise
        why = "--files" if args.files else f"the Prefect server does not know run {args.run}"
        return _from_files(args, path, None, why)
    printer = _Printer(args)
    files = Path(run["artifacts_path"]) if run.get("artifacts_path") else None
    children = _children(run) or None  # else the runs the run recorded
    if args.files:
        if files is None:
            raise PolyaxonPrefectError(
                f"run {args.run} has no run directory under this machine's artifacts root "
                "(it ran elsewhere, or the directory was removed): read it without --files"
            )
        return _from_files(args, files, children, "--files")
    if not args.follow or run["status"] in DONE_STATUSES:
        lines = _read(api, lambda: read_run_logs(api, run["id"], dag="ops" in run))
        if not lines and files is not None:
            why = f"the Prefect server has no logs of run {args.run}"
            return _from_files(args, files, children, why)
        _check_op(args.op, args.run, [*_op_paths(run), *_line_ops(lines)])
        printer(lines)
        if not args.follow:
            return 0
        return exit_code(run["status"])
    if "ops" not in run and "trials" not in run:  # a job: no op will ever have lines
        _check_op(args.op, args.run, [])
    status = _read(api, lambda: follow_logs(api, run["id"], dag="ops" in run, emit=printer))
    return exit_code(status)


# ----------------------------------------------------------------------------- statuses


def _print_change(args: argparse.Namespace, change: Any) -> None:
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
