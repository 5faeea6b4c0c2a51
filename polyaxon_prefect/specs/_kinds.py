"""What kind of runner an operation needs: one job, a DAG scheduler, or a sweep.

Pure classification of an `Operation`, so the CLI can tell before it imports Prefect, and the
DAG scheduler can record each op's kind for join queries (``kind: job``).
"""

from __future__ import annotations

from typing import Literal

from polyaxon_prefect.specs._polyaxonfile import Component, Dag, Operation
from polyaxon_prefect.specs._run_kinds import RUN_MODELS
from polyaxon_prefect.specs.sections._run_spec import KUBEFLOW_KINDS, Service

__all__ = [
    "BACKENDS",
    "LOCAL",
    "ONE_PROCESS_KINDS",
    "OpKind",
    "backend_for",
    "context_kind",
    "dag_of",
    "is_dag_kind",
    "is_service_op",
    "op_kind",
    "record_kind",
    "run_kind",
    "runs_as_one_process",
    "service_run",
]

OpKind = Literal["job", "dag", "matrix"]

BACKENDS = ("local", "kubeflow", "native", "docker")
"""Where an op's processes can run: this machine, Kubeflow operator resources, native
Kubernetes Indexed Jobs, or containers of their images on this machine (docker or podman); a
backend runs a kind once an executor is registered for the pair."""

LOCAL = BACKENDS[0]
"""The backend that runs processes on this machine."""


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


def record_kind(operation: Operation) -> str:
    """The kind a run's record and ``ls`` show: ``matrix`` for a sweep, else the component's
    ``run.kind`` (``job``, ``dag``, ``pytorchjob``, ``service``...)."""
    return "matrix" if op_kind(operation) == "matrix" else run_kind(operation) or op_kind(operation)


def dag_of(run: object) -> Dag | None:
    """``run`` as a `Dag` when it is one (a component's ``run`` section), else None: callers
    that walk nested DAGs ask here instead of testing the model's class themselves."""
    return run if isinstance(run, Dag) else None


def service_run(operation: Operation) -> Service | None:
    """The operation's ``run`` when it is a service (``kind: service``), else None."""
    match operation.component:
        case Component(run=Service() as run):
            return run
        case _:
            return None


def is_service_op(operation: Operation) -> bool:
    """Whether the op is one service (a long-running server, not a sweep of them)."""
    return op_kind(operation) == "job" and service_run(operation) is not None


def is_dag_kind(kind: object) -> bool:
    """Whether ``kind`` (raw data, before validation) names the DAG run kind."""
    return isinstance(kind, str) and RUN_MODELS.get(kind) is Dag


def context_kind(operation: Operation) -> str | None:
    """The ``kind`` a hook's context reports for an op: ``matrix`` for a sweep, else the run
    kind of its component."""
    return "matrix" if op_kind(operation) == "matrix" else run_kind(operation)


ONE_PROCESS_KINDS = ("job", "notifier")
"""The run kinds that run as one container that terminates (a notifier is a job whose process
posts a run's end): the job executor prepares and runs each of them."""


def runs_as_one_process(kind: str | None) -> bool:
    """Whether an op of run kind ``kind`` is one terminating process (no replicas, ops or
    server)."""
    return kind in ONE_PROCESS_KINDS


def backend_for(kind: str | None, requested: str, *, in_pipeline: bool) -> str:
    """The backend that runs an op of run kind ``kind``: the requested one, except that an op
    of a DAG or sweep whose kind has no Kubernetes workload runs ``local`` (jobs, services and
    the distributed kinds are sent to a cluster from inside a pipeline, each op its own pod as
    Polyaxon runs them; a notifier or a hook stays with the pipeline). On ``docker`` every op
    runs in its image, in a pipeline too."""
    if requested == "docker":
        return requested
    on_cluster = kind in ("job", "service") or kind in KUBEFLOW_KINDS
    return LOCAL if in_pipeline and not on_cluster else requested
