"""``ls -q QUERY --sort SPEC -io --to-csv``: the runs read over the thin client's `Api`,
filtered and sorted by `polyaxon_prefect.query`, and printed as a table, CSV or JSON. The one
code path of both ways in: the flow layer (`prefect.cli._ls_query_cli`) sends the requests
through Prefect's client, `thin_ls` through the standard library's HTTP (`client`), so an
``ls`` with a query answers without importing Prefect, pydantic or httpx."""

from polyaxon_prefect.runs_query._read import DETAIL_COLUMNS, pushed_filter, query_runs
from polyaxon_prefect.runs_query._table import BASE_COLUMNS, print_rows
from polyaxon_prefect.runs_query._thin import thin_ls

__all__ = [
    "BASE_COLUMNS",
    "DETAIL_COLUMNS",
    "print_rows",
    "pushed_filter",
    "query_runs",
    "thin_ls",
]
