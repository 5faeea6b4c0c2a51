"""What to run: an `OpRequest`, shared by the dispatcher and every runner.

An `OpRequest` says *what* to run (the loaded operation plus the values it receives) and how
its children inherit (connections, builds, the stop event, the backend). `OpRequest.prepare_job`
prepares a job op through the executor registered for its run kind and backend
(`polyaxon_prefect.runtime.executor_for`); which kind of runner an op needs is the dispatcher's
one decision (`polyaxon_prefect.prefect._dispatch`), which also registers the Kubernetes
executors. Keeping the request apart from the dispatcher lets the DAG and sweep runners import
it without importing each other.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from polyaxon_prefect.exceptions import UnsupportedFeatureError
from polyaxon_prefect.loading._load import LoadedPolyaxonfile
from polyaxon_prefect.runtime import PreparedJob, PrepareOptions, executor_for, locate_problems
from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.render._connections import Connection
from polyaxon_prefect.specs import LOCAL, backend_for, run_kind

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State
    from prefect.futures import PrefectFuture

    from polyaxon_prefect.dag import DagReuse
    from polyaxon_prefect.specs import Component, Operation

__all__ = ["Children", "FlowValue", "OpRequest", "OpTask", "SweepOptions"]

FlowValue: TypeAlias = "dict[str, Any] | State"
"""What a run's flow returns: the op's outputs when it succeeded, else the final state that
Prefect makes the flow run's own (a string: this module is imported before Prefect)."""


@dataclass(frozen=True)
class SweepOptions:
    """How a matrix op keeps its state and where its trials run."""

    resume: bool = False
    """Continue the latest sweep of this op (same study) instead of starting a new one."""
    storage: str | None = None
    """An Optuna storage URL or a file path; None: the local default file."""
    study_name: str | None = None
    """The study to create or resume; None: derived from the op."""
    deployment: str | None = None
    """``flow-name/deployment-name``: run each trial as a run of that deployment (a work pool)."""
    resume_study: str | None = None
    """With ``resume``: the study to continue (``resume RUN``: that run's own study), instead
    of the latest of the op; its left-running trials are re-queued as ``--resume`` does."""


@dataclass(frozen=True)
class OpRequest:
    """One operation to run, of any kind, at any depth."""

    loaded: LoadedPolyaxonfile
    """The operation with its component inlined, and its literal params (typed)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Values given on top of the file's: resolved refs, a trial's suggestion, ``-P`` values."""
    run_context: RunContext | None = None
    connections: Mapping[str, Connection] | None = None
    skip_builds: bool = False
    in_pipeline: bool = False
    """Inside a DAG (turns Polyaxon's default cache on). Trials are not: the study is the
    sweep's memory, and a resumed sweep never re-runs a completed trial."""
    base_dir: Path | None = None
    name: str | None = None
    """The run's display name (``trial-7 lr=0.01``); default: the op's name."""
    cancel_event: threading.Event | None = None
    sweep: SweepOptions = field(default_factory=SweepOptions)
    prepared: PreparedJob | None = None
    """A job op's prepared job, when it was prepared before its flow run (`prepare_request`)."""
    backend: str = LOCAL
    """Where distributed replicas run (``local``, ``kubeflow``, ``native``). A single-process
    job inside a DAG runs as a local process whatever it says (in the flow run's pod on a
    cluster); a job run alone on a Kubernetes backend is refused, as it would not run where
    it was asked to."""
    use_cache: bool = True
    """False (``run --no-cache``): no op of this run, at any depth, is served from the op
    cache; its successes are still recorded, so a later run reuses the freshest result."""
    reuse: DagReuse | None = None
    """A DAG restarted from an op (``restart --from``): the earlier run's op records, of which
    the succeeded ops not downstream of that op are reused instead of run. Its own ops only:
    the DAG runner clears it for its children."""
    secrets: tuple[str, ...] | None = None
    """Every secret of the run this op is part of (`run_secrets`: every op of a DAG or sweep,
    at any depth), masked in each op's lines too; found once by `prepare_request` for the
    top-level op (None: not yet), inherited by its children."""

    @property
    def operation(self) -> Operation:
        return self.loaded.operation

    @property
    def component(self) -> Component:
        component = self.loaded.operation.component
        assert component is not None  # a loaded operation has its component inlined
        return component

    @property
    def op_name(self) -> str:
        return str(self.operation.name or self.component.name or "op")

    @property
    def flow_name(self) -> str:
        """The flow this op's runs are grouped under: the component's name, else the op's."""
        return str(self.component.name or self.op_name)

    @property
    def tags(self) -> list[str]:
        """The run's tags: the operation's (``run --tags`` adds to them), else its
        component's, as a job's are (a template string is a job's to render: none here)."""
        tags = self.operation.tags or self.component.tags or []
        return [] if isinstance(tags, str) else [str(t) for t in tags if t]

    def with_(self, **changes: Any) -> OpRequest:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @property
    def prepare_options(self) -> PrepareOptions:
        """How this request's job is prepared (its executor's `PrepareOptions`)."""
        return PrepareOptions(
            run_context=self.run_context,
            params=self.params,
            connections=self.connections,
            in_pipeline=self.in_pipeline,
            skip_builds=self.skip_builds,
            base_dir=self.base_dir,
            secrets=self.secrets or (),
        )

    def prepare_job(self) -> PreparedJob:
        """The job this request runs, prepared now by the executor of its run kind and backend
        (its problems raise here, before it runs; a kind with no executor is refused)."""
        kind = run_kind(self.operation)
        backend = backend_for(kind, self.backend, in_pipeline=self.in_pipeline)
        try:
            executor = executor_for(kind, backend)
        except UnsupportedFeatureError as exc:  # located in the file, as prepare's problems are
            raise UnsupportedFeatureError(locate_problems(exc.problems, self.loaded)) from None
        job = executor.prepare(self.loaded, self.prepare_options)
        if self.use_cache or job.cache_key is None:
            return job
        return dataclasses.replace(job, cache_read=False)


class OpTask(Protocol):
    """A DAG op submitted as a task run: a job's task, or a task running a subflow."""

    def submit(self, wait_for: list[PrefectFuture[Any]]) -> PrefectFuture[Any]:
        """Submit the task run; returns its Prefect future."""

    def result(self, state: State) -> RunResult:
        """How the op ended, from its task run's final state."""

    def release(self) -> None:
        """Forget what the task closed over (called once the future is final)."""


class Children(Protocol):
    """How a runner runs its children (a DAG's ops, a sweep's trials), whatever their kind:
    the dispatcher, passed in, so runners never import it (nor each other)."""

    def dag_op(self, request: OpRequest) -> OpTask:
        """The task run of a DAG op (prepared now: a bad param raises here)."""

    def subflow(self, request: OpRequest) -> RunResult:
        """Run ``request`` as a subflow of the current flow run and wait for it."""

    def runs_in_process(self, request: OpRequest) -> bool:
        """Whether ``request`` runs as one process the caller can record itself (a sweep
        records such trials as flow runs, without Prefect's flow engine)."""
