"""The legacy (v0.x, ``version: 1``) Polyaxonfile: detection, validation and upgrade to v1.1.

Only the detection (`is_legacy`, `looks_legacy`, `LEGACY_KINDS`) is imported eagerly; the
legacy models load on first use of the rest.
"""

from __future__ import annotations

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.legacy._detect import LEGACY_KINDS, is_legacy, looks_legacy

__all__ = [
    "LEGACY_KINDS",
    "LegacyConversion",
    "Note",
    "convert",
    "dump_yaml",
    "is_legacy",
    "looks_legacy",
    "render_upgrade",
    "upgrade_text",
]

_LAZY = {
    "LegacyConversion": "_convert",
    "Note": "_convert",
    "convert": "_convert",
    "dump_yaml": "_upgrade",
    "render_upgrade": "_upgrade",
    "upgrade_text": "_upgrade",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
