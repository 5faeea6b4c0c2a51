"""Polyaxon's query and sort specs for ``ls -q ... --sort ...``: parsed (`parse_query`,
`parse_sort`) and applied to plain rows (`select`, `sort_rows`). Pure: the Prefect layer reads
the rows and pushes what the API can filter (`Condition`'s fields tell it what)."""

from polyaxon_prefect.query._grammar import (
    FIELDS,
    Condition,
    FieldSpec,
    QueryError,
    SortKey,
    Span,
    parse_query,
    parse_sort,
)
from polyaxon_prefect.query._match import matches, row_value, select, sort_rows

__all__ = [
    "FIELDS",
    "Condition",
    "FieldSpec",
    "QueryError",
    "SortKey",
    "Span",
    "matches",
    "parse_query",
    "parse_sort",
    "row_value",
    "select",
    "sort_rows",
]
