"""The JSON codec for what a sweep keeps in Optuna user attrs.

Optuna stores user attrs as JSON, so dates, non-finite floats and numpy scalars would not survive
a round trip (or a resume from another process) without a tag: ``{"__date__": ...}``,
``{"__datetime__": ...}`` and ``{"__float__": "inf"}`` mark them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

__all__ = ["decode", "encode"]


def encode(value: object) -> Any:
    """``value`` as JSON-safe data that ``decode`` turns back into it."""
    if isinstance(value, datetime):
        return {"__datetime__": value.isoformat()}
    if isinstance(value, date):
        return {"__date__": value.isoformat()}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return encode(item())
    return repr(value)


def decode(value: object) -> Any:
    """The value ``encode`` was given (tuples come back as lists, as JSON has no tuple)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, raw),) = value.items()
            if key == "__datetime__":
                return datetime.fromisoformat(raw)
            if key == "__date__":
                return date.fromisoformat(raw)
            if key == "__float__":
                return float(raw)
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
