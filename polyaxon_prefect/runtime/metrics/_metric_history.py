"""A run's metric history: every value ``log_metrics`` wrote, per metric, in logged order.

The one reader of ``metrics.jsonl`` as a history (``metrics RUN``, the run's chart artifact);
`read_metrics` gives the records, this groups them. Pure apart from reading the file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from polyaxon_prefect.runtime._outputs import read_metrics

__all__ = ["History", "Point", "jsonable_history", "metric_history", "run_metric_history"]

Point = dict[str, Any]
"""``{"step": int | None, "value": number, "timestamp": str | None}``."""
History = dict[str, list[Point]]
"""Metric name -> its points, in the order they were logged."""

_RESERVED = ("step", "timestamp")


def metric_history(
    records: Iterable[Mapping[str, Any]], names: Collection[str] | None = None
) -> History:
    """Each metric's points (``names``: only those metrics), in logged order; a metric
    appears in the order it was first logged."""
    history: History = {}
    for record in records:
        for name, value in record.items():
            if name in _RESERVED or (names and name not in names):
                continue
            point = {"step": record.get("step"), "value": value}
            history.setdefault(name, []).append({**point, "timestamp": record.get("timestamp")})
    return history


def run_metric_history(
    run_path: str | os.PathLike[str], names: Collection[str] | None = None
) -> History:
    """The history of the run whose directory is ``run_path`` (its ``outputs/metrics.jsonl``;
    ``{}`` when it logged none)."""
    return metric_history(read_metrics(Path(run_path) / "outputs"), names)


def _finite(value: object) -> Any:
    """A value JSON can hold: NaN and the infinities as ``metrics.jsonl`` writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def jsonable_history(history: History) -> History:
    """``history`` with its non-finite values as the strings ``"nan"``, ``"inf"``, ``"-inf"``
    (strict JSON has no numbers for them)."""
    return {
        name: [{**point, "value": _finite(point["value"])} for point in points]
        for name, points in history.items()
    }
