"""The JSON section a report (a DAG's, a sweep's, a run's record) ends with, read back, and
what a sweep's trial gave beyond its metric: `polyaxon_prefect.search` writes the section."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DATA_HEADING",
    "DISPLAY_DIGITS",
    "FENCE",
    "display",
    "read_data_section",
    "trial_results",
]

DATA_HEADING = "## Data"
FENCE = "```"
DISPLAY_DIGITS = 6
"""Significant digits of a float in the leaderboard and the best trial's Markdown (views for
people; ``--json`` and the `RunResult` keep the exact values)."""


def display(value: object) -> Any:
    """``value`` for a table a person reads: floats (also inside lists and dicts) rounded to
    `DISPLAY_DIGITS` significant digits, so ``0.30000000000000004`` reads ``0.3``."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{DISPLAY_DIGITS}g}")
    if isinstance(value, list | tuple):
        return [display(v) for v in value]
    if isinstance(value, dict):
        return {k: display(v) for k, v in value.items()}
    return value


def read_data_section(markdown: str) -> Any:
    """The data `data_section` wrote into ``markdown``, else None (an older report)."""
    head = markdown.rfind(f"{DATA_HEADING}\n\n{FENCE}json\n")
    if head < 0:
        return None
    start = markdown.index("\n", markdown.index(FENCE, head)) + 1
    end = markdown.find(f"\n{FENCE}", start)
    try:
        return json.loads(markdown[start : end if end >= 0 else None])
    except ValueError:
        return None


def trial_results(
    outputs: Mapping[str, Any] | None, metrics: Mapping[str, Any] | None, metric: str | None
) -> dict[str, Any]:
    """What a trial gave beyond the sweep's ``metric`` (shown apart as its value): its
    outputs, then the last value of each metric it logged that is not an output. A sweep
    without a metric shows these as its results (the end lines, ``get``, the leaderboard)."""
    results = {k: v for k, v in (outputs or {}).items() if k != metric}
    for key, value in (metrics or {}).items():
        if key != metric and key not in (outputs or {}):
            results[key] = value
    return results
