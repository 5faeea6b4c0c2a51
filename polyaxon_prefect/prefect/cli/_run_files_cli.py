"""``invalidate RUN`` and ``artifacts RUN [--download DIR]``: a run's cache entries and files.

Polyaxon's ``ops invalidate`` and ``ops artifacts``. RUN is what `find_run` resolves (flow-run
id, name or Polyaxon uuid); what it returns names the run's uuid, its DAG ops' and sweep
trials' uuids, and its run directory.

``invalidate`` (`client.invalidate_run`, the thin client's too) drops every cache record
(`runtime.RunCache`, under ``<artifacts root>/.cache``)
that points to the run or, for a DAG or a sweep, to one of its ops or trials: the next
identical run executes again instead of reusing their outputs. A cache hit's run points to the
run it reused, so invalidating either drops the same entry. The run itself, its files and its
history on the server are left as they are.

``artifacts`` lists what the run wrote under its run directory (a DAG's: each op's under
``ops/<op>/``), and with ``--download DIR`` copies the same tree into DIR. The op names and
uuids come from the run's report, a Prefect artifact any local process can write through the
API: a name that is not a name (``../../x``) is refused before anything is written; only
regular files are copied (a link, a FIFO is skipped, one line each), never outside DIR.

Light at import: the parsers import no Prefect; the commands do, through `find_run`.
"""

from __future__ import annotations

import argparse

from polyaxon_prefect._cli_args import Subparsers, add_run_arg, text_value

__all__ = ["add_run_files_parsers", "cmd_artifacts", "cmd_invalidate"]


def add_run_files_parsers(subparsers: Subparsers) -> None:
    invalidate = subparsers.add_parser(
        "invalidate",
        help="drop a run's cache entries (a DAG's ops' too): the next identical run executes",
    )
    add_run_arg(invalidate)
    invalidate.add_argument("--json", action="store_true")
    artifacts = subparsers.add_parser(
        "artifacts", help="list the files a run wrote (path, size), or copy them with --download"
    )
    add_run_arg(artifacts)
    artifacts.add_argument(
        "--download",
        metavar="DIR",
        type=text_value,
        default=None,
        help="copy them into DIR (created if need be; files already there are replaced)",
    )
    artifacts.add_argument("--json", action="store_true")


def cmd_invalidate(args: argparse.Namespace) -> int:
    from polyaxon_prefect.client import invalidate_run
    from polyaxon_prefect.prefect.cli._runs_cli import find_run

    _, run = find_run(args.run)  # the thin client's `invalidate` is the same, over its HTTP
    return invalidate_run(run, args.run, args.json)


def cmd_artifacts(args: argparse.Namespace) -> int:
    from polyaxon_prefect.client.run_files._artifacts_verb import show_artifacts
    from polyaxon_prefect.prefect.cli._runs_cli import find_run

    _, run = find_run(args.run)  # the thin client's `artifacts` is the same, over its HTTP
    return show_artifacts(run, args.run, args.download, args.json)
