"""Runs read back from a Prefect API, in Polyaxon's terms (``ls`` and ``get``), through
Prefect's client.

What is read and how it is shaped is `polyaxon_prefect.client.runs._run_reader` (the
API's JSON in, rows and records out), the one reader the thin client uses too: here its
requests go through Prefect's own HTTP client (its settings, auth and retries), and Prefect's
objects that other readers hold (`prefect._runs_query`) are turned into the same JSON first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias
from uuid import UUID

from pydantic import BaseModel

from polyaxon_prefect.client import artifacts_of, name_note, row, task_ops
from polyaxon_prefect.client import get_run as get_run_json
from polyaxon_prefect.client import list_runs as list_runs_json
from polyaxon_prefect.client import read_details as read_details_json

if TYPE_CHECKING:  # Prefect is imported where a command reaches a server
    from prefect.client.orchestration import SyncPrefectClient

__all__ = [
    "PrefectApi",
    "PrefectObject",
    "api_client",
    "get_run",
    "list_runs",
    "name_note",
    "read_details",
]

PrefectObject: TypeAlias = BaseModel | dict[str, Any]
"""A Prefect object read by its client (a flow run, a state, an artifact), or its JSON."""


@contextmanager
def api_client(api: str) -> Iterator[SyncPrefectClient]:
    """A sync Prefect client on the server at ``api`` (the one way the run verbs reach it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    # Settings that already point at ``api`` (a run's own server, the usual case) are used as
    # they are: a copy validates every Prefect setting again, about 50 ms of CPU each time.
    same = get_current_settings().api.url == api
    settings = contextlib.nullcontext() if same else temporary_settings({PREFECT_API_URL: api})
    with settings, get_client(sync_client=True) as c:
        yield c


class PrefectApi:
    """`polyaxon_prefect.client.Api` over a sync Prefect client."""

    def __init__(self, client: SyncPrefectClient) -> None:
        self._client = client

    def post(self, path: str, body: dict[str, Any]) -> Any:
        from polyaxon_prefect.prefect._client import api_request

        return api_request(self._client, "POST", path, body).json()

    def get(self, path: str) -> Any:
        import httpx

        from polyaxon_prefect.prefect._client import api_request

        try:
            return api_request(self._client, "GET", path, None).json()
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code == 404:
                return None
            raise


def _json(value: PrefectObject) -> dict[str, Any]:
    """A Prefect object (a flow run, an artifact) as the API's JSON; JSON as it is."""
    return value if isinstance(value, dict) else value.model_dump(mode="json")


def _artifacts(
    client: SyncPrefectClient, flow_run_ids: list[UUID]
) -> dict[UUID, list[dict[str, Any]]]:
    """The run-level artifacts (not a DAG op's) of each flow run (as JSON), in one query."""
    found = artifacts_of(PrefectApi(client), [str(i) for i in flow_run_ids])
    return {i: found[str(i)] for i in flow_run_ids}


def _row(run: PrefectObject, artifacts: list[PrefectObject]) -> dict[str, Any]:
    return row(_json(run), [_json(a) for a in artifacts])


def _task_ops(client: SyncPrefectClient, flow_run_id: UUID) -> dict[str, dict[str, Any]]:
    return task_ops(PrefectApi(client), str(flow_run_id))


def read_details(
    client: SyncPrefectClient | None, run: PrefectObject, artifacts: list[PrefectObject]
) -> dict[str, Any]:
    """`polyaxon_prefect.client.read_details` of Prefect's objects (or their JSON)."""
    api = PrefectApi(client) if client is not None else None
    return read_details_json(api, _json(run), [_json(a) for a in artifacts])


def list_runs(api: str, *, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest top-level runs, newest first (``status``: a Polyaxon status word)."""
    with api_client(api) as client:
        return list_runs_json(PrefectApi(client), status=status, limit=limit)


def get_run(api: str, run: str) -> dict[str, Any] | None:
    """One run by flow-run id, name or Polyaxon uuid (`polyaxon_prefect.client.get_run`);
    None: no such run."""
    with api_client(api) as client:
        return get_run_json(PrefectApi(client), api, run)
