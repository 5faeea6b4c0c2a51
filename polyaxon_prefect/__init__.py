"""Run Polyaxonfiles on Prefect.

The top-level API stays import-light: loading and checking a file never imports Prefect or Optuna
(``check`` runs in editors and CI hooks, where a second of import time is felt on every save).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.exceptions import (
    DagError,
    PolyaxonfileError,
    PolyaxonPrefectError,
    Problem,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from polyaxon_prefect.prefect._api import RunResult, run, to_flow
    from polyaxon_prefect.specs import Operation

__version__ = "0.1.0"

__all__ = [
    "DagError",
    "PolyaxonPrefectError",
    "PolyaxonfileError",
    "Problem",
    "RunResult",
    "UnsupportedFeatureError",
    "__version__",
    "check",
    "load",
    "run",
    "to_flow",
]


def load(
    path: str | Path,
    presets: Sequence[str | Path] = (),
    params: Mapping[str, Any] | None = None,
    *,
    hub_dirs: Sequence[str | Path] = (),
) -> Operation:
    """Load and validate a Polyaxonfile into an `Operation` with its component resolved.

    Presets are applied in order, references (``pathRef``, ``urlRef``, ``hubRef``) inlined and
    ``runPatch`` applied. Raises `PolyaxonfileError` listing every problem, located in its file.
    """
    from polyaxon_prefect.loading._load import load_polyaxonfile

    return load_polyaxonfile(path, presets, params, hub_dirs=hub_dirs).operation


def check(
    path: str | Path,
    presets: Sequence[str | Path] = (),
    params: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """Every problem of a Polyaxonfile (an empty list when it is valid)."""
    try:
        load(path, presets, params)
    except PolyaxonfileError as error:
        return list(error.problems)
    return []


# `run`, `to_flow` and `RunResult` need Prefect, so they load on first use.
__getattr__ = lazy_attributes(
    __name__, dict.fromkeys(("run", "to_flow", "RunResult"), "polyaxon_prefect.prefect._api")
)
