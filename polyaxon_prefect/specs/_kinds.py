"""What kind of runner an operation needs: one job, a DAG scheduler, or a sweep.

Pure classification of an `Operation`, so the CLI can tell before it imports Prefect, and the
DAG scheduler can record each op's kind for join queries (``kind: job``).
"""

from __future__ import annotations

from typing import Any, Literal

from polyaxon_prefect.specs._dag import Dag

__all__ = ["BACKENDS", "OpKind", "op_kind", "run_kind"]

OpKind = Literal["job", "dag", "matrix"]

BACKENDS = ("local", "kubeflow", "native")
"""Where an op's processes can run: this machine, Kubeflow operator resources, or native
Kubernetes Indexed Jobs (a backend runs a kind once an executor is registered for the pair)."""


def run_kind(operation: Any) -> str | None:
    """The ``run.kind`` of the operation's component (``job``, ``dag``, ``tfjob``, ...)."""
    component = getattr(operation, "component", None)
    run = getattr(component, "run", None)
    kind = getattr(run, "kind", None)
    return str(kind) if kind is not None else None


def op_kind(operation: Any) -> OpKind:
    """``matrix`` for an op with a matrix, ``dag`` for a DAG component, else ``job``.

    ``matrix`` wins over ``dag``: an op with a matrix whose component is a DAG is a sweep of
    DAGs. Other run kinds (services, distributed jobs) are ``job`` here: the executors registry
    (`polyaxon_prefect.runtime`) runs them or refuses them with a problem that says why.
    """
    if getattr(operation, "matrix", None) is not None:
        return "matrix"
    component = getattr(operation, "component", None)
    if isinstance(getattr(component, "run", None), Dag):
        return "dag"
    return "job"
