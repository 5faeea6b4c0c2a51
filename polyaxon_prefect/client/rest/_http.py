"""`rest._protocol.Api` over the standard library's HTTP client: what the thin client sends."""

from __future__ import annotations

import http.client
import json
import os
import random
import time
import urllib.parse
from typing import Any

__all__ = ["ApiUnavailable", "HttpApi", "unreachable"]


class ApiUnavailable(Exception):
    """The server did not answer, or answered with an error: the flow layer takes over (it
    says what is wrong as it always has)."""


def unreachable(api_url: str, why: str) -> str:
    """The one line a run verb says when the server at ``api_url`` stops answering (``why``:
    the first line of the error), both ways in."""
    return (
        f"cannot read runs from the Prefect server at {api_url} ({why}): start one with "
        "`polyaxon-prefect server start`, or set PREFECT_API_URL to one that answers"
    )


_RETRY_CODES = frozenset({408, 429, 502, 503})
"""The answers Prefect's client retries (`prefect.client.base`), with the same back-off."""


def _max_retries() -> int:
    try:
        return max(0, int(os.environ.get("PREFECT_CLIENT_MAX_RETRIES", "5")))
    except ValueError:
        return 5


def _backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds before asking again: the server's ``Retry-After`` when it gives seconds, else
    Prefect's exponential back-off (2, 4, 8... s) with a little jitter."""
    try:
        if retry_after is not None:
            return max(0.0, float(retry_after))
    except ValueError:
        pass
    return 2.0 ** (attempt + 1) * random.uniform(0.8, 1.2)


class HttpApi:
    """JSON requests to a Prefect API at ``api_url`` on one kept-alive connection."""

    def __init__(self, api_url: str, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ApiUnavailable(f"not an HTTP URL: {api_url}")
        https = parts.scheme == "https"
        kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        self._connection = kind(parts.hostname, parts.port, timeout=timeout)
        self._base = parts.path.rstrip("/")

    def _send(self, method: str, path: str, body: object) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(_max_retries() + 1):
            last = attempt == _max_retries()
            try:
                self._connection.request(method, self._base + path, body=data, headers=headers)
                response = self._connection.getresponse()
                text = response.read()
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
                # the server closed the kept-alive connection (its idle timeout) or dropped it:
                # at once on a new one, as Prefect's client does
                self._connection.close()
                if last:
                    raise ApiUnavailable(f"{method} {path}: {exc}") from exc
                continue
            except (OSError, http.client.HTTPException) as exc:
                raise ApiUnavailable(f"{method} {path}: {exc}") from exc
            if response.status in _RETRY_CODES and not last:
                # a busy server (SQLite's lock held: 503): Prefect's client waits and asks
                # again, so the thin way does too, rather than hand over to the flow layer
                time.sleep(_backoff(attempt, response.getheader("Retry-After")))
                continue
            break
        if response.status == 404 and method == "GET":
            return None
        if response.status >= 300:
            raise ApiUnavailable(f"{method} {path}: HTTP {response.status}")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ApiUnavailable(f"{method} {path}: not JSON") from exc

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._send("POST", path, body)

    def get(self, path: str) -> Any:
        return self._send("GET", path, None)

    def close(self) -> None:
        self._connection.close()
