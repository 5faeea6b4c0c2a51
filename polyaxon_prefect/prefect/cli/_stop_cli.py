"""``polyaxon-prefect stop RUN``: stop a run through Prefect, whoever started it (like
``polyaxon ops stop``).

What it does once the run is found is `polyaxon_prefect.client.runs._stop` (the flow run set
Cancelling, then whatever runs it stops it), the one code path of both ways in: here its
requests go through Prefect's client, in the thin client through its own HTTP client.

Light at import: the parser is built before Prefect is imported; the command imports it.
"""

from __future__ import annotations

import argparse

from polyaxon_prefect._cli_args import Subparsers, add_run_arg

__all__ = ["add_stop_parser", "cmd_stop"]


def add_stop_parser(subparsers: Subparsers) -> None:
    stop = subparsers.add_parser(
        "stop",
        help="stop a run (its processes, DAG ops and trials), whoever started it",
    )
    add_run_arg(stop)
    stop.add_argument("--json", action="store_true")


def cmd_stop(args: argparse.Namespace) -> int:
    from polyaxon_prefect.client.runs._stop import stop_run
    from polyaxon_prefect.prefect.cli._runs_cli import _read, find_run
    from polyaxon_prefect.prefect.runs._runs import PrefectApi, api_client

    api, run = find_run(args.run)
    with api_client(api) as client:
        return int(_read(api, lambda: stop_run(PrefectApi(client), run, as_json=args.json)))
