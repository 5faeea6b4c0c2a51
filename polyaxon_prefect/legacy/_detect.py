"""Telling a legacy (v0.x) Polyaxonfile from a v1.1 one, cheaply.

Every file goes through this check, so it lives apart from the legacy models: importing those
costs tens of milliseconds that a v1.1 `check` should not pay.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LEGACY_KINDS", "is_legacy"]

LEGACY_KINDS = ("experiment", "group", "job", "notebook", "tensorboard", "build", "pipeline")

_LEGACY_ONLY_SECTIONS = (
    "environment",
    "framework",
    "backend",
    "hptuning",
    "declarations",
    "settings",
    "logging",
)


def _is_version_one(value: Any) -> bool:
    return not isinstance(value, bool) and value in (1, "1", "1.0")


def is_legacy(data: Any) -> bool:
    """Whether ``data`` is a v0.x Polyaxonfile rather than a v1.1 one.

    True for ``version: 1`` with a legacy kind, or when a section exists only in the legacy
    format (``environment``, ``framework``, ``hptuning``... at the top level).
    """
    if not isinstance(data, dict):
        return False
    if _is_version_one(data.get("version")) and data.get("kind") in LEGACY_KINDS:
        return True
    return any(key in data for key in _LEGACY_ONLY_SECTIONS)
