"""The only caller of Prefect's artifact functions.

An artifact is a view: creating one never fails a run (a failure is a warning in the run's
log). Contents are computed by the pure report modules (`polyaxon_prefect.dag` and
`polyaxon_prefect.search`); keys come from one slug function.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from prefect import get_run_logger

from polyaxon_prefect.specs import slug

__all__ = [
    "artifact_key",
    "markdown_artifact",
    "progress_artifact",
    "table_artifact",
]


def artifact_key(name: str, suffix: str, default: str = "op") -> str:
    """``<slug of name>-<suffix>``: ``train-run``, ``pipeline-dag``, ``sweep-leaderboard``."""
    return f"{slug(name, default)}-{suffix}"


def _warn(what: str, exc: Exception) -> None:
    with contextlib.suppress(Exception):  # outside a run: nothing to tell
        get_run_logger().warning("could not create the %s artifact: %s", what, exc)


def table_artifact(rows: Sequence[dict[str, Any]], *, key: str, description: str) -> None:
    from prefect.artifacts import create_table_artifact

    try:
        create_table_artifact(list(rows), key=key, description=description)
    except Exception as exc:
        _warn("table", exc)


def markdown_artifact(markdown: str, *, key: str, description: str | None = None) -> None:
    from prefect.artifacts import create_markdown_artifact

    try:
        create_markdown_artifact(markdown, key=key, description=description)
    except Exception as exc:
        _warn("markdown", exc)


def progress_artifact(value: float, *, key: str, description: str, artifact_id: Any = None) -> Any:
    """Create the progress artifact (``artifact_id`` None) or update it; returns its id."""
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    try:
        if artifact_id is None:
            return create_progress_artifact(value, key=key, description=description)
        update_progress_artifact(artifact_id, value, description=description)
    except Exception as exc:
        _warn("progress", exc)
    return artifact_id
