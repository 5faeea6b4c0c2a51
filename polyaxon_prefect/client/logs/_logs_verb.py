"""``logs RUN`` once the run is found, the one code path of both ways in: which lines are read
(the API's, or the run's files when the server has none), the ``--op`` check, the selection and
the printing, and how ``-f`` exits. Only reading the run's files is the flow layer's
(`runtime.read_log_files`): this says when (`FromFiles`), and the thin client then leaves the
command to it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from polyaxon_prefect.client.logs._log_lines import (
    LogLine,
    exit_code,
    line_record,
    select_lines,
    shown_line,
)
from polyaxon_prefect.client.logs._log_reader import follow_logs, read_run_logs
from polyaxon_prefect.client.rest._protocol import Api
from polyaxon_prefect.client.runs._status_words import DONE_STATUSES
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = [
    "FromFiles",
    "LogsArgs",
    "Printer",
    "check_op",
    "line_ops",
    "op_paths",
    "run_children",
    "show_logs",
]


class LogsArgs(Protocol):
    """What ``logs`` was asked (its parser's namespace, or the thin client's reading of it)."""

    run: str
    follow: bool
    op: str | None
    replica: str | None
    tail: int | None
    files: bool
    json: bool


@dataclass(frozen=True)
class FromFiles:
    """The lines are to be read from the run's files: where, the runs below it, and the reason
    said on stderr."""

    path: Path
    children: dict[str, str] | None
    why: str


def run_children(run: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Op path -> run uuid of every run below ``run`` (as `get` shows it): a DAG's ops (and
    theirs), a sweep's trials."""
    found: dict[str, str] = {}
    for name, op in (run.get("ops") or {}).items():
        if op.get("uuid"):
            found[prefix + name] = op["uuid"]
        found.update(run_children(op, f"{prefix}{name}/"))
    for trial in run.get("trials") or []:
        if trial.get("uuid"):
            found[f"{prefix}trial-{trial['index']}"] = trial["uuid"]
    return found


def op_paths(run: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every op path of ``run`` (its DAG's ops and theirs, a sweep's trials), run or not."""
    paths: list[str] = []
    ops = run.get("ops")
    for name, op in ops.items() if isinstance(ops, Mapping) else ():
        paths.append(prefix + str(name))
        if isinstance(op, Mapping):
            paths += op_paths(op, f"{prefix}{name}/")
    trials = run.get("trials")
    for trial in trials if isinstance(trials, list) else ():
        if isinstance(trial, Mapping) and "index" in trial:
            paths.append(f"{prefix}trial-{trial['index']}")
    return paths


def check_op(wanted: str | None, run_name: str, paths: list[str]) -> None:
    """``--op wanted`` names an op of the run (or a DAG above some), else one line naming
    the ops it has: a misspelt op printed nothing and exited 0."""
    if wanted is None or any(p == wanted or p.startswith(wanted + "/") for p in paths):
        return
    if not paths:
        raise PolyaxonPrefectError(f"run {run_name} has no ops: `--op {wanted}` selects nothing")
    shown = ", ".join(dict.fromkeys(paths))
    raise PolyaxonPrefectError(f"run {run_name} has no op `{wanted}`; its ops: {shown}")


def line_ops(lines: list[LogLine]) -> list[str]:
    return [line.op for line in lines if line.op]


class Printer:
    """Prints the selected lines; ``--tail`` applies to what is there when it starts."""

    def __init__(self, args: LogsArgs) -> None:
        self.args = args
        self.first = True
        self.printed = False
        """Whether a line went out (a reader that fails after that cannot start again)."""

    def __call__(self, lines: list[LogLine]) -> None:
        args = self.args
        tail = args.tail if self.first else None
        self.first = False
        for line in select_lines(lines, op=args.op, replica=args.replica, tail=tail):
            self.printed = True
            if args.json:
                print(json.dumps(line_record(line), default=str))
            else:
                print(shown_line(line, replica=args.replica))
        sys.stdout.flush()


def show_logs(
    api: Api, run: Mapping[str, Any], args: LogsArgs, printer: Printer
) -> int | FromFiles:
    """Print the lines of ``run`` (as `get` shows it) that ``args`` select, following it with
    ``-f`` until it ends; the exit code, or `FromFiles` when the run's files are to be read
    instead (``--files``, or a server that has no line of it)."""
    files = Path(run["artifacts_path"]) if run.get("artifacts_path") else None
    children = run_children(run) or None  # else the runs the run recorded
    if args.files:
        if files is None:
            raise PolyaxonPrefectError(
                f"run {args.run} has no run directory under this machine's artifacts root "
                "(it ran elsewhere, or the directory was removed): read it without --files"
            )
        return FromFiles(files, children, "--files")
    dag = "ops" in run
    if not args.follow or run["status"] in DONE_STATUSES:
        lines = read_run_logs(api, run["id"], dag=dag)
        if not lines and files is not None:
            return FromFiles(files, children, f"the Prefect server has no logs of run {args.run}")
        check_op(args.op, args.run, [*op_paths(run), *line_ops(lines)])
        printer(lines)
        return exit_code(run["status"]) if args.follow else 0
    if "ops" not in run and "trials" not in run:  # a job: no op will ever have lines
        check_op(args.op, args.run, [])
    return exit_code(follow_logs(api, run["id"], dag=dag, emit=printer))
