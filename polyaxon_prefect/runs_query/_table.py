"""How ``ls -q/-s/-io/--to-csv`` prints its rows: ``--json``, ``--to-csv`` or the table. ``-io``
adds a column per param (``in.NAME``) and per output or metric (``out.NAME``: Polyaxon counts
metrics among a run's outputs), as Polyaxon's ``-io`` flattens ``inputs`` and ``outputs``;
``--to-csv`` prints the same columns as CSV, values whole. One printer both ways in."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

__all__ = ["BASE_COLUMNS", "print_rows"]

BASE_COLUMNS = ("name", "kind", "status", "started", "duration", "id")
"""The columns ``ls`` shows (``-io`` adds params and outputs after them)."""
_WIDTH = 40
"""The widest cell of the table (``ls``'s name column is clipped alike)."""


def _cell(value: Any) -> str:
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


def print_rows(
    rows: list[dict[str, Any]], *, as_json: bool, io: bool = False, to_csv: bool = False
) -> None:
    """The rows as ``--json``, ``--to-csv`` or the table ``ls`` prints."""
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    header, cells = _table(rows, io)
    if to_csv:
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
