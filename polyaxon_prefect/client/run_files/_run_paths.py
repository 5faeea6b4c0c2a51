"""Where runs keep their files on this machine: the artifacts root and a run's directory in
it (`polyaxon_prefect.runtime` re-exports these; ``get`` shows the directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "DEFAULT_ARTIFACTS_ROOT",
    "ENV_ARTIFACTS_ROOT",
    "SEGMENT",
    "find_run_path",
    "resolve_artifacts_root",
]

ENV_ARTIFACTS_ROOT = "POLYAXON_PREFECT_ARTIFACTS_ROOT"
DEFAULT_ARTIFACTS_ROOT = "~/.polyaxon_prefect/artifacts"
# Polyaxon names are slugs; anything else must not become a directory name.
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def resolve_artifacts_root(value: str | os.PathLike[str] | None = None) -> Path:
    """The absolute artifacts root: ``value``, else the env var, else the user-level default."""
    raw = value if value is not None else os.environ.get(ENV_ARTIFACTS_ROOT)
    if raw is None or str(raw).strip() == "":
        raw = DEFAULT_ARTIFACTS_ROOT
    return Path(raw).expanduser().absolute()


def find_run_path(
    run_uuid: str, artifacts_root: str | os.PathLike[str] | None = None
) -> Path | None:
    """The directory of run ``run_uuid`` under the artifacts root (``<project>/<uuid>``, any
    project), or None when no directory has it: the one lookup the run verbs (``logs``,
    ``artifacts``, ``restart``, ``resume``, ``invalidate``) use, so they agree on where a run is.
    """
    if not SEGMENT.match(run_uuid):
        return None
    root = resolve_artifacts_root(artifacts_root)
    found = [path for path in root.glob(f"*/{run_uuid}") if path.is_dir()]
    return found[0] if len(found) == 1 else None
