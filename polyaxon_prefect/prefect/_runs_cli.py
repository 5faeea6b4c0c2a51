"""``polyaxon-prefect server start|stop|status``, ``ls`` and ``get``: the local server, and the
runs read back from the Prefect API (like ``polyaxon ops ls`` / ``polyaxon ops get``).

Light at import: the parsers are built before Prefect is imported; the commands import it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from polyaxon_prefect.specs import Status

__all__ = ["add_runs_parsers", "cmd_get", "cmd_ls", "cmd_server"]

_STOPPED_EXIT = 3
"""``server status`` when the server is not running (as ``systemctl status`` says it)."""


def add_runs_parsers(subparsers: Any) -> None:
    server = subparsers.add_parser(
        "server", help="start, stop or check the local Prefect server that runs use"
    )
    server.add_argument("action", choices=("start", "stop", "status"))
    server.add_argument("--host", default="127.0.0.1")
    server.add_argument("--port", type=int, default=4200)
    server.add_argument(
        "--database-url",
        default=None,
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
    ls.add_argument("--limit", type=int, default=20)
    ls.add_argument("--json", action="store_true")
    get = subparsers.add_parser("get", help="one run: status, params, outputs, duration, URL")
    get.add_argument("run", help="the flow run's id or name")
    get.add_argument("--json", action="store_true")


def cmd_server(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect._background_server import (
        running_server,
        start_server,
        stop_server,
    )

    if args.action == "start":
        server, started = start_server(
            host=args.host, port=args.port, database_url=args.database_url
        )
        verb = "started" if started else "already running"
        print(f"Prefect server {verb} at {server.url} (pid {server.pid}; UI at the same address)")
        print(f"`polyaxon-prefect run` uses it from now on; database: {server.database}")
        return 0
    if args.action == "stop":
        stopped = stop_server()
        print(f"stopped the Prefect server (pid {stopped.pid})" if stopped else "not running")
        return 0
    current = running_server()
    if current is None:
        print("stopped")
        return _STOPPED_EXIT
    print(f"running at {current.url} (pid {current.pid}; database: {current.database})")
    return 0


def _api() -> str | None:
    """The API the runs are read from: ``PREFECT_API_URL``, else the background server."""
    from polyaxon_prefect.prefect._background_server import running_server

    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        return chosen
    server = running_server()
    return server.api_url if server is not None else None


def _no_api() -> int:
    print(
        "no Prefect server to read runs from: start one with `polyaxon-prefect server start` "
        "(runs made with it are listed), or set PREFECT_API_URL",
        file=sys.stderr,
    )
    return 1


def cmd_ls(args: argparse.Namespace) -> int:
    api = _api()
    if api is None:
        return _no_api()
    from polyaxon_prefect.prefect._runs import list_runs

    rows = list_runs(api, status=args.status, limit=args.limit)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print("no runs")
        return 0
    header = ("name", "kind", "status", "duration", "id")
    table = [header, *((r["name"], r["kind"], r["status"], r["duration"], r["id"]) for r in rows)]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    api = _api()
    if api is None:
        return _no_api()
    from polyaxon_prefect.prefect._runs import get_run

    run = get_run(api, args.run)
    if run is None:
        print(f"no run with id or name `{args.run}`", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(run, indent=2, default=str))
        return 0
    for key in ("name", "kind", "status", "message", "duration", "url"):
        print(f"{key}: {run[key]}")
    for section in ("params", "outputs", "metrics", "ops"):
        if run[section]:
            print(f"{section}:")
            for name, value in run[section].items():
                print(f"  {name}: {value}")
    return 0
