"""Every use of Prefect's non-public client internals, behind one adapter.

Three things the public API does not offer are needed, each for a measured reason:

- `api_request`: a request sent on the sync client's own httpx client, without Prefect's retry
  loop (which sleeps ``2 ** attempt`` seconds on a ``503`` from a busy SQLite server, even with
  retries set to 0), with its CSRF headers; trials record their flow runs this way.
- `ephemeral_api_url`: the URL of the ephemeral server Prefect started in this process (kept
  on a class), so the session's reaper can mark runs crashed when the process dies.
- `result_value`: a completed task's in-memory return value, without the hop through Prefect's
  event-loop thread that ``state.result()`` costs (about a millisecond per DAG op).

`tests/prefect/test_client_adapter.py` checks each of these against the installed Prefect, so
an upgrade that moves them fails there, loudly, and not as a slow or broken run.
"""

from __future__ import annotations

import random
import threading
import time
from typing import cast

import httpx
from prefect.client.base import PrefectHttpxSyncClient
from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.objects import State

__all__ = ["api_request", "ephemeral_api_url", "result_value"]

_API_LOCK = threading.Lock()
_RETRYABLE = (429, 503)
_API_ATTEMPTS = 80


def _http_client(client: SyncPrefectClient) -> PrefectHttpxSyncClient:
    """The httpx client under a sync `PrefectClient` (``SyncPrefectClient._client``)."""
    # declared an `httpx.Client` by Prefect's base class; made a `PrefectHttpxSyncClient`
    return cast(PrefectHttpxSyncClient, client._client)


def api_request(
    client: SyncPrefectClient,
    method: str,
    path: str,
    json: object,
    *,
    attempts: int | None = None,
) -> httpx.Response:
    """Send one request to the Prefect API: one at a time, retried quickly when busy.

    Trials record their flow runs themselves, from four or more threads at once. An
    SQLite-backed server answers ``503`` when a write meets another one (its "database is
    locked"). Our requests go one at a time, so they never collide with each other, and a
    ``503``/``429`` (a collision with the server's own writers) is retried after a few
    milliseconds. ``attempts``: at most this many tries (default: about 15 s of them); the last
    answer, a ``503`` included, raises `httpx.HTTPStatusError`.
    """
    http = _http_client(client)
    request = http.build_request(method, path, json=json)
    if getattr(http, "enable_csrf_support", False):
        http._add_csrf_headers(request)
    delay = 0.005
    tries = max(1, attempts or _API_ATTEMPTS)
    for attempt in range(tries):
        last = attempt + 1 == tries
        try:
            with _API_LOCK:
                response = httpx.Client.send(http, request)
        except httpx.TransportError:  # a dropped connection, a read timeout under load
            if last:
                raise
        else:
            if response.status_code not in _RETRYABLE or last:
                response.raise_for_status()
                return response
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 1.5, 0.25)
    raise AssertionError("unreachable")


def ephemeral_api_url() -> str | None:
    """The API URL of the ephemeral server Prefect started in this process, if any."""
    try:
        from prefect.server.api.server import SubprocessASGIServer
    except ImportError:
        return None
    instances = getattr(SubprocessASGIServer, "_instances", {}) or {}
    for server in instances.values():
        if getattr(server, "running", False) and getattr(server, "port", None):
            return str(server.api_url)
    return None


def result_value(state: State) -> object:
    """A completed task's return value: from the in-memory result record when there is one,
    else through Prefect (a persisted result)."""
    from prefect.results import ResultRecord

    data = state.data
    if isinstance(data, ResultRecord):
        return data.result
    return state.result(raise_on_failure=False)
