"""What loading a Polyaxonfile gives: the validated operation, its typed params, its sources.

It lives with the specs (not in ``loading``) because every layer above passes it around: the DAG
planner builds one per child op, the sweep one per trial, the runtime runs one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs._polyaxonfile import Component, Operation

__all__ = ["LoadedPolyaxonfile"]


@dataclass(frozen=True)
class LoadedPolyaxonfile:
    """A validated operation with its component resolved, and where it came from."""

    operation: Operation  # with `component` inlined
    params: dict[str, Any]  # typed literal param values (refs excluded)
    files: tuple[str, ...]
    legacy_notes: tuple[str, ...] = ()
    warnings: tuple[Problem, ...] = ()
    given_params: frozenset[str] = frozenset()
    """Params whose values the caller gave (``-P``, ``params=``): data, never rendered as
    templates, unlike a ``{{ }}`` value written in the file."""
    from_legacy: bool = False
    """Whether the main file was written in the legacy (v0.x) format: some defaults follow it
    (old Polyaxon ran distributed experiments without an operator)."""

    @property
    def component(self) -> Component | None:
        return self.operation.component
