"""How far a run is, as ``get`` shows it: read back from its flow run's label, and in words.

A running sweep or job keeps its progress (`polyaxon_prefect.search.SweepProgress`, a job's
``log_progress``) as JSON in one flow-run label, stamped with when it was written; both ways
in (the thin client and the flow layer) read it here, so ``get`` says the same either way.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from polyaxon_prefect.client.runs._reports import display

__all__ = ["PROGRESS_LABEL", "UPDATED_KEY", "format_eta", "progress_from_labels", "progress_words"]

PROGRESS_LABEL = "polyaxon.progress"
"""The flow-run label that holds a running sweep's or job's progress (JSON)."""
UPDATED_KEY = "updated"
"""When the progress was written (ISO 8601, UTC): ``get`` counts the ETA down from it."""


def progress_from_labels(
    labels: Mapping[str, Any] | None, *, final: bool, now: datetime | None = None
) -> dict[str, Any] | None:
    """The progress a flow run's labels hold, for ``get``: the ETA counted down from when it
    was written while the run goes on, none once it is over (``final``); None without one."""
    text = (labels or {}).get(PROGRESS_LABEL)
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    updated = data.pop(UPDATED_KEY, None)
    eta = data.pop("eta_seconds", None)
    if isinstance(eta, int | float) and not final:
        since = 0.0
        with contextlib.suppress(TypeError, ValueError):
            since = ((now or datetime.now(UTC)) - datetime.fromisoformat(updated)).total_seconds()
        data["eta_seconds"] = round(max(0.0, eta - max(0.0, since)), 1)
    return data


def format_eta(seconds: float | None) -> str:
    """``45s``, ``1m20s``, ``2h05m`` (``?``: not known yet)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def progress_words(progress: Mapping[str, Any]) -> str:
    """``get``'s line for a run's ``progress`` (a `to_dict` read back): ``7/20 done, 2
    running, 1 failed; best loss 0.29 (trial 4, best over steps); eta 1m20s`` for a sweep,
    ``45%; eta 3m10s`` for a job."""
    if "done" not in progress:
        text = f"{float(progress.get('fraction') or 0.0):.0%}"
    else:
        text = f"{progress['done']}/{progress.get('total') or '?'} done"
        text += f", {progress['running']} running" if progress.get("running") else ""
        text += f", {progress['failed']} failed" if progress.get("failed") else ""
    best = progress.get("best")
    if isinstance(best, Mapping):
        shown = display(best.get("value"))
        text += f"; best {best.get('metric')} {shown} (trial {best.get('trial')}"
        text += f", {best.get('ranked_by')})" if best.get("ranked_by") else ")"
    if progress.get("eta_seconds") is not None:
        text += f"; eta {format_eta(progress['eta_seconds'])}"
    return text
