"""A metric history as pictures: a line chart in the terminal (``metrics --plot``), a unicode
sparkline, and an SVG chart in the run's Markdown artifact (the Prefect UI shows a Markdown
image given as a ``data:`` URI inline). Pure: text in, text out.
"""

from __future__ import annotations

import base64
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

__all__ = ["chart_markdown", "sparkline", "svg_chart", "text_chart"]

_BARS = "▁▂▃▄▅▆▇█"
_MAX_SVG_POINTS = 500
"""At most this many points per SVG line (evenly picked, the last one kept)."""
MAX_CHARTS = 6
"""The main metrics of a run's chart artifact: the first ones it logged, at most this many."""


def _xy(points: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """Finite (x, value) pairs: x is the step, or the point's index when it has no step."""
    pairs: list[tuple[float, float]] = []
    for index, point in enumerate(points):
        value, step = point.get("value"), point.get("step")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value):
            continue
        x = step if isinstance(step, int) and not isinstance(step, bool) else index
        pairs.append((float(x), float(value)))
    return pairs


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _picked(items: Sequence[Any], most: int) -> list[Any]:
    if len(items) <= most:
        return list(items)
    stride = (len(items) - 1) / (most - 1)
    return [items[round(i * stride)] for i in range(most)]


def sparkline(points: Sequence[Mapping[str, Any]], width: int = 24) -> str:
    """The values as one line of block characters (at most ``width``), low to high."""
    values = [v for _, v in _picked(_xy(points), width)]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(_BARS[round((v - low) / span * (len(_BARS) - 1)) if span else 0] for v in values)


def text_chart(
    name: str, points: Sequence[Mapping[str, Any]], width: int = 60, height: int = 10
) -> list[str]:
    """A line chart of ``points`` in ``height`` rows of ``width`` columns: the value axis on
    the left (its top, middle and bottom), the steps below; ``•`` at each column's value."""
    pairs = _xy(points)
    if not pairs:
        return [f"{name}: no finite value to plot"]
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    x0, x1, low, high = min(xs), max(xs), min(ys), max(ys)
    grid = [[" "] * width for _ in range(height)]

    middle = (height - 1) // 2

    def row(value: float) -> int:
        if high == low:  # a flat line: across the middle
            return middle
        return height - 1 - round((value - low) / (high - low) * (height - 1))

    previous: int | None = None
    for column in range(width):
        x = x0 + (x1 - x0) * column / (width - 1) if width > 1 else x0
        r = row(_at(pairs, x))
        if previous is not None:  # a steep change: join it to the column before
            for between in range(min(previous, r) + 1, max(previous, r)):
                grid[between][column] = "│"
        grid[r][column] = "•"
        previous = r
    if high == low:
        labels = {middle: _fmt(high)}
    else:
        shown = high - (high - low) * middle / (height - 1)
        labels = {0: _fmt(high), middle: _fmt(shown), height - 1: _fmt(low)}
    pad = max(len(label) for label in labels.values())
    lines = [f"{name} ({len(pairs)} point{'s' if len(pairs) != 1 else ''})"]
    for index, cells in enumerate(grid):
        lines.append(f"{labels.get(index, '').rjust(pad)} ┤{''.join(cells).rstrip()}")
    lines.append(" " * pad + " └" + "─" * width)
    left, right = f"{x0:g}", f"{x1:g}"
    lines.append(" " * (pad + 2) + left + right.rjust(width - len(left)) + "  step")
    return lines


def _at(pairs: list[tuple[float, float]], x: float) -> float:
    """The value at ``x``: linear between the points around it (pairs in logged order)."""
    ordered = sorted(pairs)
    if x <= ordered[0][0]:
        return ordered[0][1]
    for (xa, ya), (xb, yb) in itertools.pairwise(ordered):
        if xa <= x <= xb:
            return ya if xb == xa else ya + (yb - ya) * (x - xa) / (xb - xa)
    return ordered[-1][1]


def svg_chart(
    name: str, points: Sequence[Mapping[str, Any]], width: int = 360, height: int = 180
) -> str | None:
    """A line chart as an SVG document (light background, readable on the UI's dark and
    light themes); None when no value is finite."""
    pairs = _picked(sorted(_xy(points)), _MAX_SVG_POINTS)
    if not pairs:
        return None
    left, right, top, bottom = 56, 12, 26, 30
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    x0, x1, low, high = min(xs), max(xs), min(ys), max(ys)
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + ((x - x0) / (x1 - x0) * plot_w if x1 > x0 else plot_w / 2)

    def sy(y: float) -> float:
        return top + (plot_h - (y - low) / (high - low) * plot_h if high > low else plot_h / 2)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pairs)
    dots = "".join(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5"/>' for x, y in pairs)
    base = top + plot_h
    text = 'font-family="sans-serif" font-size="11" fill="#333"'
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
        f'<rect width="{width}" height="{height}" rx="6" fill="#fdfdfd"/>'
        f'<text x="{left}" y="16" font-family="sans-serif" font-size="13" font-weight="bold" '
        f'fill="#222">{escape(name)}</text>'
        f'<path d="M{left},{top} V{base} H{left + plot_w}" stroke="#999" fill="none"/>'
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" {text}>{_fmt(high)}</text>'
        f'<text x="{left - 4}" y="{base}" text-anchor="end" {text}>{_fmt(low)}</text>'
        f'<text x="{left}" y="{base + 16}" {text}>{x0:g}</text>'
        f'<text x="{left + plot_w}" y="{base + 16}" text-anchor="end" {text}>{x1:g}</text>'
        f'<text x="{left + plot_w / 2}" y="{base + 16}" text-anchor="middle" {text}>step</text>'
        f'<polyline points="{line}" fill="none" stroke="#1f6feb" stroke-width="2"/>'
        f'<g fill="#1f6feb">{dots if len(pairs) <= 60 else ""}</g>'
        "</svg>"
    )


def _cell(value: object) -> str:
    return _fmt(value) if isinstance(value, float) else str(value)


def chart_markdown(title: str, history: Mapping[str, Sequence[Mapping[str, Any]]]) -> str | None:
    """A run's chart artifact: an SVG chart of each of its main metrics (the first
    `MAX_CHARTS` it logged with two points or more), then a table of every metric (points,
    first, last, min, max, a sparkline). None when no metric has two points."""
    charted = [name for name, points in history.items() if len(_xy(points)) >= 2]
    if not charted:
        return None
    images = []
    for name in charted[:MAX_CHARTS]:
        svg = svg_chart(name, history[name])
        if svg is not None:
            data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            images.append(f"![{name}](data:image/svg+xml;base64,{data})")
    lines = [f"# {title}", "", "\n".join(images), ""]
    lines += [
        "| metric | points | first | last | min | max | trend |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, points in history.items():
        values = [v for _, v in _xy(points)]
        first, last = points[0]["value"], points[-1]["value"]
        low = _cell(min(values)) if values else "-"
        high = _cell(max(values)) if values else "-"
        cells = [name, str(len(points)), _cell(first), _cell(last), low, high, sparkline(points)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
