"""Moved to `polyaxon_prefect._source` (``legacy`` and ``dag`` use it too); kept for old imports."""

from polyaxon_prefect._source._problems import problems_from_validation_error, suggest

__all__ = ["problems_from_validation_error", "suggest"]
