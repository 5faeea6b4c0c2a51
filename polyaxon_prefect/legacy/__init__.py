"""The legacy (v0.x, ``version: 1``) Polyaxonfile: detection, validation and upgrade to v1.1.

Only `is_legacy` is imported eagerly; the legacy models load on first use of the rest.
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"polyaxon_prefect.legacy.{module}"), name)
