"""``ls`` with ``-q``, ``-s``, ``-io`` or ``--to-csv``, answered without Prefect: the command
line read as the flow layer's parser reads it (`client.ls_args`), the query and sort parsed by
the one parser (`polyaxon_prefect.query`), the rows read and printed by the one reader and
printer (`_read`, `_table`) over the standard library's HTTP. A query or sort that does not
parse, and any command line or server the thin client cannot answer exactly, is None: the
flow layer says it (argparse's usage line with the position) as it always has."""

from __future__ import annotations

import sys
from typing import Any

from polyaxon_prefect.client import declined, ls_args, on_server, wants_query

__all__ = ["thin_ls"]


def thin_ls(words: list[str]) -> int | None:
    """``ls WORDS`` when a flag of the query layer is among them; None where the thin client
    (`client.thin_main`) or the flow layer answers."""
    args = ls_args(words)
    if args is None or not wants_query(args):
        return None
    from polyaxon_prefect.query import QueryError, parse_query, parse_sort

    try:
        conditions = parse_query(args["query"]) if args["query"] is not None else ()
        sort = parse_sort(args["sort"]) if args["sort"] is not None else ()
        if args["status"] is not None:  # one more condition, as the flow layer's `ls_rows`
            conditions = (*parse_query(f"status:{args['status']}"), *conditions)
    except QueryError as error:
        declined(f"the query or sort does not parse ({error}): the flow layer's parser says where")
        return None
    return on_server(lambda api, server: _answer(api, server, args, conditions, sort))


def _answer(api: Any, server: Any, args: dict[str, Any], conditions: Any, sort: Any) -> int:
    from polyaxon_prefect.runs_query._read import query_runs
    from polyaxon_prefect.runs_query._table import print_rows

    rows = query_runs(api, conditions, sort, limit=args["limit"], details=args["io"])
    if server.notice is not None:
        print(server.notice, file=sys.stderr, flush=True)
    print_rows(rows, as_json=args["json"], io=args["io"], to_csv=args["to_csv"])
    return 0
