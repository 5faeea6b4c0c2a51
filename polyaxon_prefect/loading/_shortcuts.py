"""Polyaxon 2.18's top-level ``environment`` of a component, read as 2.18 reads it.

2.18 accepts a few run fields at the top of a Polyaxonfile as shortcuts and, when it composes the
component, patches each into the ``run`` with ``post_merge`` (``apply_shortcuts``), before any
operation's ``runPatch``; a distributed run gets it on every replica, as ``runPatch`` does. Only
``environment`` is read here (the docs' files use it); the others stay unknown keys.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.loading._patch import apply_run_patch
from polyaxon_prefect.specs import replica_paths, run_keys

__all__ = ["apply_environment_shortcut"]

PathT = tuple[str | int, ...]


def apply_environment_shortcut(component: dict[str, Any]) -> tuple[list[Problem], list[PathT]]:
    """Move ``component["environment"]`` into its ``run``, in place.

    Returns the problems of the patch (paths relative to the component, under ``environment``)
    and the paths, relative to the component, where the run now holds the patched environment
    (``("run", "environment")`` or one per replica), for the caller to point them at the shortcut.
    Nothing happens without both an ``environment`` and a ``run`` mapping.
    """
    run = component.get("run")
    if "environment" not in component or not isinstance(run, dict):
        return [], []
    environment = component.pop("environment")
    try:
        component["run"] = apply_run_patch(run, {"environment": environment}, "post_merge")
    except PolyaxonfileError as exc:
        problems = [p.relocated(("environment", *p.path[2:])) for p in exc.problems]
        return problems, []
    return [], [("run", *path) for path in _environments(component["run"])]


def _environments(run: dict[str, Any]) -> list[PathT]:
    """Where a ``run`` keeps its pod ``environment``: the run's own, or each replica's."""
    kind = run.get("kind")
    keys = run_keys(kind) if isinstance(kind, str) else None
    if keys is None or "environment" in keys:
        return [("environment",)]
    return [(*path, "environment") for path in replica_paths(str(kind), run)]
