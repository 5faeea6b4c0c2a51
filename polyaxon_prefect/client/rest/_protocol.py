"""What every reader of the thin client sends its requests through: the few calls of Prefect's
REST API they make, JSON in and JSON out. The thin client answers them with `_http.HttpApi`,
the flow layer with Prefect's client (`prefect.runs._runs`), so the readers (runs, logs, status
history, stop) are one code path of both ways in."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Api"]


class Api(Protocol):
    """The few calls of Prefect's REST API the readers make; JSON in, JSON out."""

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """``POST path`` with ``body``: the answer's JSON."""

    def get(self, path: str) -> Any:
        """``GET path``: the answer's JSON, None when the server says 404."""
