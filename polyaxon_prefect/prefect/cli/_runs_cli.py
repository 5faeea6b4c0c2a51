"""``polyaxon-prefect server start|stop|status``, ``ls`` and ``get``: the local server, and the
runs read back from the Prefect API (like ``polyaxon ops ls`` / ``polyaxon ops get``).

Light at import: the parsers are built before Prefect is imported; the commands import it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from polyaxon_prefect._cli_args import (
    Subparsers,
    add_run_arg,
    port,
    seconds,
    text_value,
    whole_number,
)
from polyaxon_prefect.client import print_ls, print_run
from polyaxon_prefect.prefect.cli._ls_query_cli import (
    add_query_args,
    ls_rows,
    print_rows,
    wants_query,
)
from polyaxon_prefect.specs import Status

T = TypeVar("T")

__all__ = ["add_runs_parsers", "cmd_get", "cmd_ls", "cmd_server", "find_run", "run_api"]

_MAX_LIMIT = 1000
"""The most runs ``ls`` reads in one go (each row costs the API a few reads)."""


_DATABASE_SCHEMES = ("postgresql+asyncpg://", "sqlite+aiosqlite://")


def _database_url(text: str) -> str:
    """``server start --database-url``: a URL of a database Prefect's server can use."""
    if not text.startswith(_DATABASE_SCHEMES):
        raise argparse.ArgumentTypeError(
            f"must start with {' or '.join(_DATABASE_SCHEMES)} (the drivers Prefect's server "
            f"uses), not {text.split('://', 1)[0]!r}"
        )
    return text


def add_runs_parsers(subparsers: Subparsers) -> None:
    server = subparsers.add_parser(
        "server", help="start, stop or check the local Prefect server that runs use"
    )
    server.add_argument("action", choices=("start", "stop", "status"))
    server.add_argument("--host", default="127.0.0.1", type=text_value)
    server.add_argument(
        "--port", type=port, default=None, help="default: $POLYAXON_PREFECT_SERVER_PORT, else 4200"
    )
    server.add_argument(
        "--idle-timeout",
        type=seconds,
        default=0.0,
        metavar="SECONDS",
        help="stop it after this long without use and with no run going (default: never; a "
        "server a command starts by itself uses $POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT, 600)",
    )
    server.add_argument(
        "--set-profile",
        action="store_true",
        help="also point the active Prefect profile at it (`prefect config set PREFECT_API_URL=`"
        "...), so `prefect worker start` and `prefect deployment run` use the same server",
    )
    server.add_argument(
        "--database-url",
        default=None,
        type=_database_url,
        help="a PostgreSQL URL (postgresql+asyncpg://...); default: SQLite in the Prefect home",
    )
    ls = subparsers.add_parser("ls", help="list the latest runs (flow runs) and their status")
    ls.add_argument(
        "--status",
        default=None,
        choices=[str(status) for status in Status],
        metavar="STATUS",
        help="only runs with this Polyaxon status: " + ", ".join(Status),
    )
    ls.add_argument(
        "--limit",
        type=whole_number(1, _MAX_LIMIT),
        default=20,
        help=f"how many runs, 1 to {_MAX_LIMIT} (default 20)",
    )
    ls.add_argument("--json", action="store_true")
    add_query_args(ls)
    get = subparsers.add_parser(
        "get", help="one run: status, params, outputs, metrics, a DAG's ops, a sweep's trials"
    )
    add_run_arg(get)
    get.add_argument("--json", action="store_true")
    get.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="first show its status changes (on stderr) until it ends, as `statuses -w`; "
        "exit 0 if it succeeded, else 1",
    )


def cmd_server(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect.server._background_server import start_server, stop_server

    if args.action == "start":
        server, started = start_server(
            host=args.host,
            port=args.port or _default_port(),
            database_url=args.database_url,
            idle_timeout=args.idle_timeout,
            # the default port held by another program: a free one (`--port` is kept as asked)
            any_free_port=args.port is None,
        )
        verb = "started" if started else "already running"
        print(f"Prefect server {verb} at {server.url} (pid {server.pid}; UI at the same address)")
        print(f"`polyaxon-prefect run` uses it from now on; database: {server.database}")
        if args.set_profile:
            _set_profile(server.api_url)
            print(f"the Prefect profile now points at it (PREFECT_API_URL={server.api_url})")
        else:
            print(f"for `prefect` commands: prefect config set PREFECT_API_URL={server.api_url}")
        return 0
    if args.action == "stop":
        record, stopped = stop_server()
        if stopped and record is not None:
            print(f"stopped the Prefect server (pid {record.pid})")
        elif record is not None and record.started is None and Path("/proc/self").exists():
            print(
                "not running: removed a record that cannot prove pid "
                f"{record.pid} is its server (no start time: an older version wrote it); "
                "nothing was signalled"
            )
        elif record is not None:
            print(
                f"not running: removed the record of a server that is gone (pid {record.pid} "
                "is no longer it; nothing was signalled)"
            )
        else:
            print("not running")
        return 0
    from polyaxon_prefect.client.server._server_status import server_status

    return server_status()  # the thin client answers `server status` with it too


def _default_port() -> int:
    """The port commands start the local server on, so `server start` starts the same one."""
    from polyaxon_prefect.prefect.server._connect import _port

    return _port()


def _set_profile(api_url: str) -> None:
    """``prefect config set PREFECT_API_URL=...`` on the active profile: written without
    importing Prefect (~2 CPU s) where its result is certain, else by Prefect."""
    from polyaxon_prefect.prefect.server._profile import write_api_url

    if write_api_url(api_url):
        return
    from prefect.settings import PREFECT_API_URL, update_current_profile

    update_current_profile({PREFECT_API_URL: api_url})


def _api() -> str | None:
    """The API the runs are read from: ``PREFECT_API_URL``, else the background server."""
    from polyaxon_prefect.prefect.server._background_server import running_server

    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        return chosen
    server = running_server()
    return server.api_url if server is not None else None


def _no_api(args: argparse.Namespace) -> int:
    return _refused(
        args,
        "no Prefect server to read runs from: start one with `polyaxon-prefect server start` "
        "(runs made with it are listed), or set PREFECT_API_URL",
    )


def _refused(args: argparse.Namespace, message: str, **extra: object) -> int:
    """Exit 1 with ``message`` on stderr, and under ``--json`` ``{"error": message, ...}`` on
    stdout (a script that asked for JSON gets JSON on every outcome)."""
    print(message, file=sys.stderr)
    if args.json:
        print(json.dumps({"error": message, **extra}, indent=2, default=str))
    return 1


def _read(api: str, read: Callable[[], T]) -> T:
    """``read()`` of the runs at ``api``; a server that does not answer, or answers with an
    error, is one `PolyaxonPrefectError` line (the CLI's ``error:``), not httpx's traceback."""
    import httpx

    from polyaxon_prefect.client.rest._http import unreachable
    from polyaxon_prefect.exceptions import PolyaxonPrefectError

    try:
        return read()
    except httpx.HTTPError as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PolyaxonPrefectError(unreachable(api, why)) from None


def cmd_ls(args: argparse.Namespace) -> int:
    api = _api()
    if api is None:
        return _no_api(args)
    if wants_query(args):
        print_rows(_read(api, lambda: ls_rows(api, args)), args)
        return 0
    from polyaxon_prefect.prefect.runs._runs import list_runs

    rows = _read(api, lambda: list_runs(api, status=args.status, limit=args.limit))
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print_ls(rows)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    api = _api()
    if api is None:
        return _no_api(args)
    from polyaxon_prefect.prefect.runs._runs import get_run

    run = _read(api, lambda: get_run(api, args.run))
    if run is None:
        return _refused(args, f"no run with the id, name or uuid `{args.run}`")
    _say_note(run)
    code = 0
    if args.watch:
        from polyaxon_prefect.prefect.runs._logs import watch_statuses
        from polyaxon_prefect.runtime import exit_code

        show = lambda change: print(change.line(), file=sys.stderr, flush=True)  # noqa: E731
        run_id = run["id"]
        code = exit_code(_read(api, lambda: watch_statuses(api, run_id, show)))
        note = {"note": run["note"]} if "note" in run else {}
        ended = _read(api, lambda: get_run(api, run_id))
        run = {**(ended or run), **note}  # as it ended
    if args.json:
        print(json.dumps(run, indent=2, default=str))
        return code
    print_run(run)
    return code


def _say_note(run: dict[str, Any]) -> None:
    """The run's ``note`` (its name was several runs', this is the latest) as one line on
    stderr: stdout stays the run alone (under ``--json`` the note is also its field)."""
    if run.get("note"):
        print(f"note: {run['note']}", file=sys.stderr, flush=True)


def run_api() -> str:
    """The API the run verbs use (``PREFECT_API_URL``, else the background server); none is
    one `PolyaxonPrefectError` line."""
    from polyaxon_prefect.exceptions import PolyaxonPrefectError

    api = _api()
    if api is None:
        raise PolyaxonPrefectError(
            "no Prefect server to read runs from: start one with `polyaxon-prefect server "
            "start` (runs made with it are listed), or set PREFECT_API_URL"
        )
    return api


def find_run(ref: str) -> tuple[str, dict[str, Any]]:
    """The API and the run ``ref`` names (flow-run id, name or Polyaxon uuid), as `get` shows it
    (``artifacts_path`` included): the one lookup of every verb that takes a RUN. No such run is
    one `PolyaxonPrefectError` line; a name several runs have is the latest of them, and one
    line on stderr says so."""
    from polyaxon_prefect.exceptions import PolyaxonPrefectError
    from polyaxon_prefect.prefect.runs._runs import get_run

    api = run_api()
    run = _read(api, lambda: get_run(api, ref))
    if run is None:
        raise PolyaxonPrefectError(f"no run with the id, name or uuid `{ref}`")
    _say_note(run)
    return api, run
