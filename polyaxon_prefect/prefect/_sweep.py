"""A matrix operation as a sweep flow run (placeholder until the scheduler lands)."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError

__all__ = ["run_sweep_in_flow"]


def run_sweep_in_flow(request: Any, on_outcome: Any = None) -> Any:
    raise UnsupportedFeatureError([Problem("sweeps cannot run yet", rule="unsupported_kind")])
