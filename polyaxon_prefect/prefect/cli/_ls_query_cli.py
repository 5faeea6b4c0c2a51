"""``ls -q QUERY --sort SPEC -io --to-csv``: Polyaxon's ``ops ls`` flags on top of ``ls``.

The query and sort are parsed while the command line is (a bad one is argparse's one usage
line with the position, exit 2, before any server is started); `prefect._runs_query` reads and
filters the runs; `polyaxon_prefect.runs_query` prints them (the thin client's reader and
printer: an ``ls`` with these flags on a server known without Prefect never gets here).

Light at import: no Prefect (the parser is built for every command).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyaxon_prefect.query import Condition, SortKey

__all__ = ["add_query_args", "ls_rows", "print_rows", "wants_query"]


def _query(text: str) -> tuple[Condition, ...]:
    # the query package is loaded when a query is given: every other command (`check`) skips it
    from polyaxon_prefect.query import QueryError, parse_query

    try:
        return parse_query(text)
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sort(text: str) -> tuple[SortKey, ...]:
    from polyaxon_prefect.query import QueryError, parse_sort

    try:
        return parse_sort(text)
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_query_args(ls: argparse.ArgumentParser) -> None:
    ls.add_argument(
        "-q",
        "--query",
        type=_query,
        default=(),
        metavar="QUERY",
        help="only runs that meet every condition, in Polyaxon's query language: "
        '"status:running|failed, kind:job, metrics.loss:<=0.2, name:%%resnet%%, tags:nightly, '
        'params.lr:0.01, started_at:2026-01-01 .. 2026-01-31" '
        '(docs/guide/runs.md: "Querying runs")',
    )
    ls.add_argument(
        "-s",
        "--sort",
        type=_sort,
        default=(),
        metavar="SPEC",
        help='order by these fields, `-` for descending: "-metrics.loss, started_at" '
        "(default: newest first)",
    )
    ls.add_argument(
        "-io",
        "--io",
        dest="io",
        action="store_true",
        help="add the params (in.NAME) and the outputs and metrics (out.NAME) as columns",
    )
    ls.add_argument(
        "--to-csv",
        action="store_true",
        help="print the rows as CSV on stdout (every column shown, values whole)",
    )


def wants_query(args: argparse.Namespace) -> bool:
    """Whether ``ls`` was given any of the flags this module serves."""
    return bool(args.query or args.sort or args.io or args.to_csv)


def ls_rows(api: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows ``ls`` prints for ``args`` (``--status`` is one more condition)."""
    from polyaxon_prefect.prefect.runs._runs_query import query_runs
    from polyaxon_prefect.query import parse_query

    conditions = tuple(args.query)
    if args.status is not None:
        conditions = (*parse_query(f"status:{args.status}"), *conditions)
    return query_runs(api, conditions, tuple(args.sort), limit=args.limit, details=args.io)


def print_rows(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The rows as ``--json``, ``--to-csv`` or the table ``ls`` prints (the thin client's
    printer: `polyaxon_prefect.runs_query.print_rows`)."""
    from polyaxon_prefect.runs_query import print_rows as print_query_rows

    print_query_rows(rows, as_json=args.json, io=args.io, to_csv=args.to_csv)
