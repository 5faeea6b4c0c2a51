"""``ls -q QUERY --sort SPEC -io``: runs read back from the Prefect API, filtered and sorted,
through Prefect's client. The reading, the filter pushed to the API and the query's checks are
`polyaxon_prefect.runs_query`'s, the one code path the thin client takes too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polyaxon_prefect.prefect.runs._runs import PrefectApi, api_client
from polyaxon_prefect.query import Condition, SortKey
from polyaxon_prefect.runs_query import DETAIL_COLUMNS, pushed_filter
from polyaxon_prefect.runs_query import query_runs as read_query_runs

if TYPE_CHECKING:
    from prefect.client.schemas.filters import FlowRunFilter

__all__ = ["DETAIL_COLUMNS", "query_runs"]


def _pushed_filter(conditions: tuple[Condition, ...]) -> FlowRunFilter:
    """The filter `query_runs` sends, read by Prefect's own ``FlowRunFilter`` model: what the
    server makes of it (its checks hold the JSON to Prefect's meaning)."""
    from prefect.client.schemas.filters import FlowRunFilter

    return FlowRunFilter.model_validate(pushed_filter(conditions))


def query_runs(
    api: str,
    conditions: tuple[Condition, ...] = (),
    sort: tuple[SortKey, ...] = (),
    *,
    limit: int = 20,
    details: bool = False,
) -> list[dict[str, Any]]:
    """The top-level runs at ``api`` that meet every condition, ordered by ``sort`` (default:
    newest first), at most ``limit`` (`polyaxon_prefect.runs_query.query_runs`)."""
    with api_client(api) as client:
        return read_query_runs(PrefectApi(client), conditions, sort, limit=limit, details=details)
