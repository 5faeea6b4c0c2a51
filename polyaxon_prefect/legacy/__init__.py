"""The legacy (v0.x, ``version: 1``) Polyaxonfile: detection, validation and upgrade to v1.1.

Only `is_legacy` is imported eagerly; the legacy models load on first use of the rest.
"""

from __future__ import annotations

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.legacy._detect import is_legacy

__all__ = [
    "LegacyConversion",
    "Note",
    "convert",
    "dump_yaml",
    "is_legacy",
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
