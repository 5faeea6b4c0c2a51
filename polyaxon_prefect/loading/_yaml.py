"""Moved to `polyaxon_prefect._source` (``legacy`` reads YAML too); kept for old imports."""

from polyaxon_prefect._source._yaml import Document, Positions, parse_yaml

__all__ = ["Document", "Positions", "parse_yaml"]
