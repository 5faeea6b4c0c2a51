"""``ls -q QUERY --sort SPEC -io --to-csv``: Polyaxon's ``ops ls`` flags on top of ``ls``.

The query and sort are parsed while the command line is (a bad one is argparse's one usage
line with the position, exit 2, before any server is started); `prefect._runs_query` reads and
filters the runs. ``-io`` adds a column per param (``in.NAME``) and per output or metric
(``out.NAME``: Polyaxon counts metrics among a run's outputs), as Polyaxon's ``-io`` flattens
``inputs`` and ``outputs``; ``--to-csv`` prints the same columns as CSV, values whole.

Light at import: no Prefect (the parser is built for every command).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyaxon_prefect.query import Condition, SortKey

__all__ = ["add_query_args", "ls_rows", "print_rows", "wants_query"]

BASE_COLUMNS = ("name", "kind", "status", "started", "duration", "id")
"""The columns ``ls`` shows (``-io`` adds params and outputs after them)."""
_WIDTH = 40
"""The widest cell of the table (``ls``'s name column is clipped alike)."""


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


def _cell(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _io_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(column, section, name)`` of every param, output and metric some row has."""
    found: dict[str, tuple[str, str, str]] = {}
    for row in rows:
        for name in row.get("params") or {}:
            found.setdefault(f"in.{name}", (f"in.{name}", "params", name))
        for section in ("outputs", "metrics"):
            for name in row.get(section) or {}:
                found.setdefault(f"out.{name}", (f"out.{name}", section, name))
    return [found[column] for column in sorted(found)]


def _table(rows: list[dict[str, Any]], io: bool) -> tuple[list[str], list[list[str]]]:
    extra = _io_columns(rows) if io else []
    base = list(BASE_COLUMNS)
    if io and any(row.get("gpu_hours") is not None for row in rows):
        base.insert(base.index("duration") + 1, "gpu_hours")  # GPUs x wall time
    header = [*base, *(column for column, _, _ in extra)]
    cells: list[list[str]] = []
    for row in rows:
        values = [_cell(row.get(column)) for column in base]
        for _, section, name in extra:
            source = row.get(section) or {}
            if section == "outputs" and name not in source:
                source = row.get("metrics") or {}
            values.append(_cell(source.get(name)))
        cells.append(values)
    return header, cells


def print_rows(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The rows as ``--json``, ``--to-csv`` or the table ``ls`` prints."""
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return
    header, cells = _table(rows, args.io)
    if args.to_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(cells)
        return
    if not rows:
        print("no runs")
        return
    table = [header, *([_clipped(cell) if cell else "-" for cell in row] for row in cells)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        cells_line = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells_line).rstrip())


def _clipped(text: str) -> str:
    """A cell at most `_WIDTH` wide (``--json`` and ``--to-csv`` show values whole)."""
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "\u2026"
