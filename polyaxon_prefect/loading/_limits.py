"""Moved to `polyaxon_prefect._source` (reading a file is below loading); kept for old imports."""

from polyaxon_prefect._source._limits import (
    LIMITS,
    MAX_FILE_BYTES,
    MAX_REFERENCES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    URL_MAX_BYTES,
    URL_TIMEOUT,
    Limit,
    SourceError,
    read_source,
)

__all__ = [
    "LIMITS",
    "MAX_FILE_BYTES",
    "MAX_REFERENCES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "URL_MAX_BYTES",
    "URL_TIMEOUT",
    "Limit",
    "SourceError",
    "read_source",
]
