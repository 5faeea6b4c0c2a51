"""What kind of runner an operation needs: one job, a DAG scheduler, or a sweep.

Pure classification of an `Operation`, so the CLI can tell before it imports Prefect, and the
DAG scheduler can record each op's kind for join queries (``kind: job``).
"""

from __future__ import annotations

from typing import Literal

from polyaxon_prefect.specs._component import Component
from polyaxon_prefect.specs._dag import Dag
from polyaxon_prefect.specs._operation import Operation

__all__ = ["BACKENDS", "OpKind", "op_kind", "run_kind"]

OpKind = Literal["job", "dag", "matrix"]

BACKENDS = ("local", "kubeflow", "native")
"""Where an op's processes can run: this machine, Kubeflow operator resources, or native
Kubernetes Indexed Jobs (a backend runs a kind once an executor is registered for the pair)."""


def run_kind(operation: Operation) -> str | None:
    """The ``run.kind`` of the operation's component (``job``, ``dag``, ``tfjob``, ...)."""
    match operation.component:
        case Component(run=run):
            return run.kind
        case _:
            return None


def op_kind(operation: Operation) -> OpKind:
    """``matrix`` for an op with a matrix, ``dag`` for a DAG component, else ``job``.

    ``matrix`` wins over ``dag``: an op with a matrix whose component is a DAG is a sweep of
    DAGs. Other run kinds (services, distributed jobs) are ``job`` here: the executors registry
    (`polyaxon_prefect.runtime`) runs them or refuses them with a problem that says why.
    """
    match operation:
        case Operation(matrix=matrix) if matrix is not None:
            return "matrix"
        case Operation(component=Component(run=Dag())):
            return "dag"
        case _:
            return "job"
