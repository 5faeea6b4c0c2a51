"""A DAG operation as one Prefect flow run (placeholder until the scheduler lands)."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError

__all__ = ["run_dag_in_flow"]


def run_dag_in_flow(request: Any, on_outcome: Any = None) -> Any:
    raise UnsupportedFeatureError([Problem("dags cannot run yet", rule="unsupported_kind")])
