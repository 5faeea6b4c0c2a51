"""Why the thin client left a command to the flow layer, in one stderr line when
``POLYAXON_PREFECT_DEBUG_THIN`` is set (to anything but ``0``): the answer is the same either
way, only seconds slower, so this is how a user (or a test) sees which condition sent it there.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ENV_DEBUG_THIN", "debugging", "declined"]

ENV_DEBUG_THIN = "POLYAXON_PREFECT_DEBUG_THIN"


def debugging() -> bool:
    return os.environ.get(ENV_DEBUG_THIN, "").strip() not in ("", "0")


def declined(reason: str) -> None:
    """Say ``reason`` (why the thin way is not taken) when debugging; nothing otherwise."""
    if debugging():
        print(f"thin client declined: {reason}", file=sys.stderr, flush=True)
