"""The legacy (v0.x, ``version: 1``) Polyaxonfile: detection, validation and upgrade to v1.1."""

from __future__ import annotations

from polyaxon_prefect.legacy._convert import LegacyConversion, Note, convert, is_legacy
from polyaxon_prefect.legacy._upgrade import dump_yaml, render_upgrade, upgrade_text

__all__ = [
    "LegacyConversion",
    "Note",
    "convert",
    "dump_yaml",
    "is_legacy",
    "render_upgrade",
    "upgrade_text",
]
