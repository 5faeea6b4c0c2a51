"""``polyaxon-prefect restart RUN`` and ``resume RUN``: like ``polyaxon ops restart`` / ``ops
resume``, a run again from what it recorded (`polyaxon_prefect.prefect.runs._restart` builds the
request; it then runs as ``run`` runs one: server, signals, live table, end lines, ``--json``).

Light at import: the parsers are built before Prefect is imported; the commands import it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from polyaxon_prefect._cli_args import Subparsers, add_params_arg, text_value, whole_number
from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError
from polyaxon_prefect.prefect.cli._run_flags import add_follow_flags

if TYPE_CHECKING:
    from collections.abc import Callable

    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.runtime import Connection

__all__ = ["add_restart_parsers", "cmd_restart", "cmd_resume"]

_USAGE = 2


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        type=text_value,
        help="the run: its Polyaxon uuid (what `run` printed), flow-run id or flow-run name",
    )
    parser.add_argument(
        "--connections",
        metavar="FILE",
        default=None,
        help="the connections file (default: $POLYAXON_PREFECT_CONNECTIONS); a run records "
        "connection names only",
    )
    parser.add_argument(
        "--storage",
        metavar="URL",
        default=None,
        help="a sweep's Optuna storage, when its recorded URL had a password (never recorded)",
    )
    parser.add_argument("--live", action="store_true", help="a live table of op statuses")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    add_follow_flags(parser)


def add_restart_parsers(subparsers: Subparsers) -> None:
    """Add ``restart`` and ``resume`` to ``subparsers`` (from ``add_subparsers``)."""
    restart = subparsers.add_parser(
        "restart",
        help="run a run's recorded operation again (a DAG from its failed op)",
        description="Run the operation RUN recorded again, as a new run, with -P/-f on top. "
        "A DAG reuses the succeeded ops before --from OP (default: its first failed or "
        "stopped op) while their code is unchanged and runs OP and everything downstream of "
        "it; --force OP runs OP again whatever the op cache holds.",
    )
    _common(restart)
    restart.add_argument(
        "--from",
        dest="from_op",
        default=None,
        type=text_value,
        metavar="OP",
        help="a DAG's op to run from (default: the first failed or stopped op)",
    )
    restart.add_argument(
        "--force",
        dest="force_ops",
        action="append",
        default=[],
        type=text_value,
        metavar="OP",
        help="a DAG's op to run again even when the op cache or the earlier run could serve "
        "it (repeatable); the ops downstream of it are then not reused from the earlier run",
    )
    restart.add_argument(
        "--copy",
        action="store_true",
        help="start the new run's directory as a copy of the old run's",
    )
    add_params_arg(restart, help="a param value on top of the recorded ones (repeatable)")
    restart.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="a preset (override) file applied on top of the recorded operation (repeatable)",
    )
    resume = subparsers.add_parser(
        "resume",
        help="continue a sweep's own study (after a kill, a stop or its end)",
        description="Continue the study of the sweep RUN: trials left running run again, "
        "finished ones never; --more N runs N trials beyond numRuns/maxIterations.",
    )
    _common(resume)
    resume.add_argument(
        "--more",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="run N more trials than the sweep was set to (numRuns/maxIterations + N)",
    )


# ----------------------------------------------------------------------------- commands


def _guarded(args: argparse.Namespace, build: Callable[[], tuple[OpRequest, str]]) -> int:
    """Build the request (``build()``: it and the line saying what it does), prepare it and run
    it as ``run`` does; a refusal is one line and exit 2, a bad file or run one line and 1
    (JSON too under --json)."""
    from polyaxon_prefect.prefect._dispatch import prepare_request
    from polyaxon_prefect.prefect.cli._cli import _invalid, run_cli_request
    from polyaxon_prefect.prefect.runs._restart import RestartRefused

    try:
        request, line = build()
        request = prepare_request(request)
    except RestartRefused as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": str(refusal)}))
        return _USAGE
    except (PolyaxonfileError, PolyaxonPrefectError) as error:
        return _invalid(error, as_json=args.json)
    print(line, file=sys.stderr)
    return run_cli_request(args, request)


def _connections(args: argparse.Namespace) -> dict[str, Connection]:
    from polyaxon_prefect.runtime import load_connections

    return load_connections(args.connections)


def cmd_restart(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect restart``; returns the exit code."""
    from polyaxon_prefect.loading import parse_cli_params
    from polyaxon_prefect.prefect.runs._restart import restart_request

    return _guarded(
        args,
        lambda: restart_request(
            args.run,
            from_op=args.from_op,
            force=args.force_ops or [],
            params=parse_cli_params(args.params or []),
            presets=args.files or [],
            copy=args.copy,
            connections=_connections(args),
            storage=args.storage,
        ),
    )


def cmd_resume(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect resume``; returns the exit code."""
    from polyaxon_prefect.prefect.runs._restart import resume_request

    return _guarded(
        args,
        lambda: resume_request(
            args.run, more=args.more, connections=_connections(args), storage=args.storage
        ),
    )
