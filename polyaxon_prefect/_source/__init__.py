"""Reading a source file into located data, and located problems from it.

The lowest layer the file-reading packages share (``specs``, ``legacy``, ``loading``, ``dag``):
the YAML reader that remembers where every key came from (`parse_yaml`, `Positions`), the limits
on what reading may cost (`read_source`), and the translation of pydantic errors into located
`Problem`s with "did you mean" hints (`problems_from_validation_error`, `suggest`). It imports
nothing of the package but `polyaxon_prefect.exceptions`.
"""

from __future__ import annotations

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
from polyaxon_prefect._source._located_yaml import Document, Positions, SectionKind, parse_yaml
from polyaxon_prefect._source._problems import problems_from_validation_error, suggest

__all__ = [
    "LIMITS",
    "MAX_FILE_BYTES",
    "MAX_REFERENCES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "URL_MAX_BYTES",
    "URL_TIMEOUT",
    "Document",
    "Limit",
    "Positions",
    "SectionKind",
    "SourceError",
    "parse_yaml",
    "problems_from_validation_error",
    "read_source",
    "suggest",
]
