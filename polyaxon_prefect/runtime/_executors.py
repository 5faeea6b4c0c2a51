"""Which executor runs an op of a given run kind, on a given backend.

The one place that maps a run kind to the code that runs it, so a new kind or backend (the
replicas of a distributed run; Kubeflow or native Kubernetes manifests) registers an executor
here instead of adding a branch to every runner; a kind with no executor is refused here, with a
hint saying where it can run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError
from polyaxon_prefect.specs import BACKENDS, KUBEFLOW_KINDS

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.runtime._connections import Connection
    from polyaxon_prefect.runtime._context import RunContext
    from polyaxon_prefect.runtime._job import PreparedJob
    from polyaxon_prefect.runtime._outcome import JobResult

__all__ = [
    "BACKENDS",
    "EXECUTORS",
    "LOCAL",
    "Executor",
    "JobExecutor",
    "ReplicasExecutor",
    "executor_for",
    "refuse_unless_one_process",
    "register_executor",
]

LOCAL = BACKENDS[0]
"""The backend that runs processes on this machine (``kubeflow`` and ``native`` come later)."""

_HINTS = {
    "dag": "a dag runs as a pipeline: use the pipeline runner, not a single job",
    "service": "a service is a long-running server; run its command yourself, or set "
    "`kind: job` if it terminates",
}
_DEFAULT_HINT = (
    "this kind has no executor on this backend (Ray and Dask clusters are not run; the "
    "Kubernetes backends run the six Kubeflow kinds); use `kind: job`, or a Kubeflow kind "
    "for replicas"
)


class Executor(Protocol):
    """Runs ops of one run kind on one backend: everything that can fail before anything runs
    in `prepare`, then the run itself in `execute`, which reports what happened (never raises
    for what the op did)."""

    def prepare(
        self,
        loaded: LoadedPolyaxonfile,
        *,
        run_context: RunContext | None = None,
        params: Mapping[str, Any] | None = None,
        connections: Mapping[str, Connection] | None = None,
        in_pipeline: bool = False,
        skip_builds: bool = False,
        base_dir: Path | None = None,
    ) -> PreparedJob: ...

    def execute(
        self,
        prepared: PreparedJob,
        *,
        on_line: Callable[[str, str], None] | None = None,
        cancel_event: threading.Event | None = None,
    ) -> JobResult: ...


@dataclass(frozen=True)
class LocalExecutor:
    """An executor whose two steps are functions of one runtime module, imported on first use
    (so looking an executor up stays as light as the registry): ``job`` runs one process
    (`runtime._job`), a distributed kind one process per replica (`runtime._replicas`)."""

    module: str
    prepare_name: str
    execute_name: str

    def _function(self, name: str) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(import_module(self.module), name)
        return function

    def prepare(self, loaded: LoadedPolyaxonfile, **options: Any) -> PreparedJob:
        prepared: PreparedJob = self._function(self.prepare_name)(loaded, **options)
        return prepared

    def execute(self, prepared: PreparedJob, **options: Any) -> JobResult:
        result: JobResult = self._function(self.execute_name)(prepared, **options)
        return result


JobExecutor = LocalExecutor("polyaxon_prefect.runtime._job", "prepare_job", "execute_job")
"""A ``kind: job`` op as one local process: `prepare_job`, then `execute_job`."""

ReplicasExecutor = LocalExecutor(
    "polyaxon_prefect.runtime._replicas", "prepare_replicas", "execute_replicas"
)
"""A distributed op (``tfjob``, ``pytorchjob``...) as one local process per replica."""


EXECUTORS: dict[tuple[str, str], Executor] = {
    ("job", LOCAL): JobExecutor,
    ("notifier", LOCAL): JobExecutor,  # a job whose process posts a run's end (hub notifiers)
    **dict.fromkeys(((kind, LOCAL) for kind in sorted(KUBEFLOW_KINDS)), ReplicasExecutor),
}
"""The executor of each ``(run kind, backend)``."""


def register_executor(kind: str, backend: str, executor: Executor) -> None:
    """Register ``executor`` for ``(kind, backend)``: how a layer above the runtime (the
    Prefect layer's Kubernetes executors, which need a cluster client) plugs a backend in
    without the runtime importing it."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    EXECUTORS[(kind, backend)] = executor


def executor_for(kind: str | None, backend: str = LOCAL) -> Executor:
    """The executor registered for ``kind`` on ``backend``.

    Raises:
        UnsupportedFeatureError: no executor for that kind there (rule ``unsupported_kind``,
            located at ``component.run.kind``, with a hint saying where the kind can run).
    """
    executor = EXECUTORS.get((kind or "", backend))
    if executor is not None:
        return executor
    runnable = " or ".join(f"`{k}`" for k, b in EXECUTORS if b == backend) or "no kind"
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


def refuse_unless_one_process(kind: str | None) -> None:
    """Refuse (as `executor_for` does) a kind that does not run as one process: `prepare_job`
    prepares a single container, a distributed kind is prepared by its own executor.

    Raises:
        UnsupportedFeatureError: rule ``unsupported_kind``, located at ``component.run.kind``.
    """
    if executor_for(kind) is JobExecutor:
        return
    raise UnsupportedFeatureError(
        [
            Problem(
                f"run kind `{kind}` cannot run as one process: it has replicas",
                rule="unsupported_kind",
                path=("component", "run", "kind"),
                hint=f"run it through its executor: `executor_for({kind!r}).prepare(...)`, "
                "as `polyaxon_prefect.run` does",
            )
        ]
    )
