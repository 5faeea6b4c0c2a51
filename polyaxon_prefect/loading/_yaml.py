"""The Polyaxonfile YAML reader: `polyaxon_prefect._source`'s, told the matrix kinds.

``_source`` sits below the models and keeps no kind list of its own; a Polyaxonfile reader
passes it the matrix kinds so that a file which lost its ``matrix:`` line is told so.
"""

from __future__ import annotations

from polyaxon_prefect._source import Document, Positions
from polyaxon_prefect._source import parse_yaml as parse_source_yaml
from polyaxon_prefect.specs import MATRIX_SECTION_KINDS

__all__ = ["Document", "Positions", "parse_yaml"]


def parse_yaml(text: str, *, file: str | None = None) -> Document:
    """Parse one Polyaxonfile YAML document, keeping positions; raise `PolyaxonfileError` on
    bad YAML (with a hint naming the lost ``matrix:`` line where that is the slip)."""
    return parse_source_yaml(text, file=file, section_kinds=MATRIX_SECTION_KINDS)
