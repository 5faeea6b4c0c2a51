"""Telling a legacy (v0.x) Polyaxonfile from a v1.1 one, cheaply.

Every file goes through this check, so it lives apart from the legacy models: importing those
costs tens of milliseconds that a v1.1 `check` should not pay.
"""

from __future__ import annotations

__all__ = ["LEGACY_KINDS", "is_legacy", "looks_legacy"]

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


def _is_version_one(value: object) -> bool:
    return not isinstance(value, bool) and value in (1, "1", "1.0")


def _is_version_one_one(value: object) -> bool:
    return not isinstance(value, bool) and str(value).strip() == "1.1"


def is_legacy(data: object) -> bool:
    """Whether ``data`` is a v0.x Polyaxonfile rather than a v1.1 one.

    The ``version`` decides first: ``1.1`` is never legacy, even with a top-level
    ``environment`` or ``connections`` (valid v1.1 fields). Otherwise it is legacy for
    ``version: 1`` with a legacy kind, or when a section exists only in the legacy format
    (``environment``, ``framework``, ``hptuning``... at the top level).
    """
    if not isinstance(data, dict):
        return False
    version = data.get("version")
    if _is_version_one_one(version):
        return False
    if _is_version_one(version) and data.get("kind") in LEGACY_KINDS:
        return True
    return any(key in data for key in _LEGACY_ONLY_SECTIONS)


def looks_legacy(data: object) -> list[str]:
    """The legacy-only features of ``data`` (``kind: experiment``, ``run.cmd``...), for hints."""
    if not isinstance(data, dict):
        return []
    found = [f"`{key}`" for key in _LEGACY_ONLY_SECTIONS if key in data]
    if data.get("kind") in LEGACY_KINDS:
        found.insert(0, f"`kind: {data['kind']}`")
    run = data.get("run")
    if isinstance(run, dict) and "cmd" in run:
        found.append("`run.cmd`")
    return found
