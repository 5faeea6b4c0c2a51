"""Which executor runs an op of a given run kind, on a given backend.

The one place that maps a run kind to the code that runs it, so a new kind or backend (the
replicas of a distributed run on this machine; Kubeflow or native Kubernetes manifests, which
the Prefect layer registers) adds an executor here instead of a branch to every runner. Every
lookup fails loudly: a kind with no executor is refused with a hint saying where it can run,
and what an executor prepares is stamped with the kind and backend it was registered for, so
it can only ever be run by that same executor.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError
from polyaxon_prefect.runtime._launcher import Launcher, ProcessLauncher
from polyaxon_prefect.runtime._local_service import execute_service, prepare_service
from polyaxon_prefect.runtime._one_process import (
    LOCAL,
    ONE_PROCESS_KINDS,
    PreparedJob,
    execute_job,
    prepare_job,
)
from polyaxon_prefect.runtime._replicas import execute_replicas, prepare_replicas
from polyaxon_prefect.runtime.docker._container import CONTAINER_BACKEND
from polyaxon_prefect.runtime.docker._container_launcher import ContainerLauncher
from polyaxon_prefect.runtime.docker._container_replicas import CONTAINER_REPLICA_KINDS
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.specs import BACKENDS, KUBEFLOW_KINDS

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.runtime._result import RunResult

__all__ = [
    "BACKENDS",
    "EXECUTORS",
    "LOCAL",
    "Executor",
    "JobExecutor",
    "LocalExecutor",
    "ReplicasExecutor",
    "ServiceExecutor",
    "executor_for",
    "register_executor",
    "runnable_kinds",
]

_HINTS = {
    "dag": "a dag runs as a pipeline: use the pipeline runner, not a single job",
    "service": "a service runs locally (`--backend local` or `docker`) or as a Deployment and a "
    "Service "
    "on Kubernetes (`--backend native` or `kubeflow`)",
}
_DEFAULT_HINT = (
    "this kind has no executor on this backend (Ray and Dask clusters are not run; the "
    "Kubernetes backends run jobs and the Kubeflow kinds); use `kind: job`, or a Kubeflow "
    "kind for replicas"
)

LineCallback = Callable[[str, str], None]


class Executor(Protocol):
    """Runs ops of one run kind on one backend: everything that can fail before anything runs
    in `prepare`, then the run itself in `execute`, which reports what happened (never raises
    for what the op did)."""

    def prepare(
        self, loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
    ) -> PreparedJob: ...

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: LineCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> RunResult: ...


Prepare = Callable[["LoadedPolyaxonfile", PrepareOptions, Launcher], PreparedJob]
Execute = Callable[..., "RunResult"]


@dataclass(frozen=True)
class LocalExecutor:
    """A run shape over a launcher: the shape's two functions (one process: `prepare_job`,
    `execute_job`; one process per replica: `prepare_replicas`, `execute_replicas`; a
    service: `prepare_service`, `execute_service`), each given a launcher of its own made by
    ``launcher`` (on this machine: `ProcessLauncher`; in containers: `ContainerLauncher`)."""

    prepare_fn: Prepare
    execute_fn: Execute
    launcher: Callable[[], Launcher] = ProcessLauncher

    def prepare(
        self, loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
    ) -> PreparedJob:
        return self.prepare_fn(loaded, options, self.launcher())

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: LineCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> RunResult:
        return self.execute_fn(
            prepared, on_line=on_line, cancel_event=cancel_event, launcher=self.launcher()
        )


JobExecutor = LocalExecutor(prepare_job, execute_job)
"""A ``kind: job`` op as one local process: `prepare_job`, then `execute_job`."""
ReplicasExecutor = LocalExecutor(prepare_replicas, execute_replicas)
"""A distributed op (``tfjob``, ``pytorchjob``...) as one local process per replica."""
ServiceExecutor = LocalExecutor(prepare_service, execute_service)
"""A ``kind: service`` op as one managed long-running local process (`runtime._local_service`)."""
ContainerJobExecutor = LocalExecutor(prepare_job, execute_job, ContainerLauncher)
"""The ``docker`` backend: a one-container op as one container of its image."""
ContainerReplicasExecutor = LocalExecutor(prepare_replicas, execute_replicas, ContainerLauncher)
"""The ``docker`` backend: a distributed op as one container per replica."""
ContainerServiceExecutor = LocalExecutor(prepare_service, execute_service, ContainerLauncher)
"""The ``docker`` backend: a service as one container of its image, its ports published."""


@dataclass(frozen=True)
class _Registered:
    """An executor as registered for ``(kind, backend)``: what it prepares says so, so that
    `execute_job_op` finds this same executor again (a kind cannot fall through to another)."""

    kind: str
    backend: str
    executor: Executor

    def prepare(
        self, loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
    ) -> PreparedJob:
        prepared = self.executor.prepare(loaded, options)
        return dataclasses.replace(prepared, run_kind=self.kind, backend=self.backend)

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: LineCallback | None = None,
        cancel_event: threading.Event | None = None,
    ) -> RunResult:
        if (prepared.run_kind, prepared.backend) != (self.kind, self.backend):
            raise ValueError(
                f"a `{prepared.run_kind}` op prepared for the `{prepared.backend}` backend "
                f"cannot run as `{self.kind}` on `{self.backend}`"
            )
        return self.executor.execute(prepared, on_line=on_line, cancel_event=cancel_event)


EXECUTORS: dict[tuple[str, str], Executor] = {}
"""The executor of each ``(run kind, backend)``: the local ones below; the Kubernetes ones
when the Prefect layer registers them (`polyaxon_prefect.prefect._dispatch.register_backends`)."""


def register_executor(kind: str, backend: str, executor: Executor) -> None:
    """Register ``executor`` for ``(kind, backend)``: how a layer above the runtime (the
    Prefect layer's Kubernetes executors, which need a cluster client) plugs a backend in
    without the runtime importing it. Registering the same executor again changes nothing.

    Raises:
        ValueError: an unknown backend, or another executor already registered there.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    current = EXECUTORS.get((kind, backend))
    if isinstance(current, _Registered) and current.executor == executor:
        return
    if current is not None:
        raise ValueError(f"run kind `{kind}` already has an executor on `{backend}`")
    EXECUTORS[(kind, backend)] = _Registered(kind, backend, executor)


for _kind in ONE_PROCESS_KINDS:
    register_executor(_kind, LOCAL, JobExecutor)
for _kind in sorted(KUBEFLOW_KINDS):
    register_executor(_kind, LOCAL, ReplicasExecutor)
for _kind in ONE_PROCESS_KINDS:
    register_executor(_kind, CONTAINER_BACKEND, ContainerJobExecutor)
for _kind in CONTAINER_REPLICA_KINDS:
    register_executor(_kind, CONTAINER_BACKEND, ContainerReplicasExecutor)
register_executor("service", LOCAL, ServiceExecutor)
register_executor("service", CONTAINER_BACKEND, ContainerServiceExecutor)


def runnable_kinds(backend: str = LOCAL) -> list[str]:
    """The run kinds with an executor on ``backend``, in registration order."""
    return [kind for kind, where in EXECUTORS if where == backend]


def executor_for(kind: str | None, backend: str = LOCAL) -> Executor:
    """The executor registered for ``kind`` on ``backend``.

    Raises:
        UnsupportedFeatureError: no executor for that kind there (rule ``unsupported_kind``,
            located at ``component.run.kind``, with a hint saying where the kind can run).
    """
    executor = EXECUTORS.get((kind or "", backend))
    if executor is not None:
        return executor
    runnable = " or ".join(f"`{k}`" for k in runnable_kinds(backend)) or "no kind"
    where = "the local runtime" if backend == LOCAL else f"the `{backend}` backend"
    raise UnsupportedFeatureError(
        [
            Problem(
                f"run kind `{kind}` cannot run on {where}, only {runnable} can",
                rule="unsupported_kind",
                path=("component", "run", "kind"),
                hint=_HINTS.get(kind or "", _DEFAULT_HINT),
            )
        ]
    )
