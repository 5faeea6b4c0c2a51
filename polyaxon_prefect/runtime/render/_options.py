"""What every executor's ``prepare`` is told besides the operation: one frozen value.

One type instead of the same six keywords repeated by each executor (job, replicas, cluster)
and by every caller, so a new preparation setting is added once and reaches every kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._context import RunContext
    from polyaxon_prefect.runtime.render._connections import Connection

__all__ = ["PrepareOptions"]


@dataclass(frozen=True)
class PrepareOptions:
    """How an op is prepared: its run's identity, the values it receives, where it runs."""

    run_context: RunContext | None = None
    """The run's identity and directories; None: a new one (project from
    ``POLYAXON_PREFECT_PROJECT``, else ``default``), made when the op runs, not when it fails
    to prepare."""
    params: Mapping[str, Any] | None = None
    """Overrides: typed values, or strings parsed by the input's declared type."""
    connections: Mapping[str, Connection] | None = None
    """The connections by name; None: `load_connections()` (the env var's file). A cluster
    run reads its own (``POLYAXON_PREFECT_K8S_CONNECTIONS``)."""
    in_pipeline: bool = False
    """The op runs inside a DAG (turns Polyaxon's default cache on)."""
    skip_builds: bool = False
    """Prepare build ops as skipped instead of raising `BuildNotSupportedError`."""
    base_dir: Path | None = None
    """The Polyaxonfile's folder; None: the folder of the loaded file's first path."""
    secrets: tuple[str, ...] = ()
    """The secrets of the run the op is part of (every op of its DAG or sweep, at any depth:
    `run_secrets`): a value an upstream op read from its connection is masked in this op's
    lines, logs and artifacts too."""
