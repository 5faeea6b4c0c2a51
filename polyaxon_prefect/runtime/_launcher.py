"""Where an op's processes start: the seam between the shape of a run and its backend.

A shape (one process: `execute_job`; one process per replica: `execute_replicas`; a service:
`execute_service`) decides which processes run, with which argv and env, and when the op is
over. A `Launcher` decides how each of them starts: on this machine (`ProcessLauncher`), or
in its image (`polyaxon_prefect.runtime.docker._container.ContainerLauncher`). A new backend
(a remote Docker, Slurm) is one launcher; every shape then runs on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime.render._render_sections import python_env
from polyaxon_prefect.runtime.session._process import ProcessResult, run_process
from polyaxon_prefect.specs import LOCAL

if TYPE_CHECKING:
    from polyaxon_prefect.distributed import Cluster, ReplicaPlan
    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.runtime._result import RunResult
    from polyaxon_prefect.runtime.render._options import PrepareOptions

__all__ = ["PROCESS", "Launch", "Launcher", "Process", "ProcessLauncher", "run_launched"]

LineCallback = Callable[[str, str], None]


@dataclass(frozen=True)
class Launch:
    """One process a shape asks for: whose it is (``job``: a replica's own), its argv and
    its whole environment."""

    job: PreparedJob
    argv: Sequence[str]
    env: Mapping[str, str]
    name: str = ""
    """A replica's name (its container's hostname on the run's network); "" for an op's one
    process."""
    publish: tuple[tuple[int, int], ...] = ()
    """A service's ports: (the local one its URL names, the declared one it listens on)."""


def _nothing(_result: ProcessResult | None) -> None:
    return None


@dataclass(frozen=True)
class Process:
    """What `run_process` is given for a `Launch`, and what to do once it ended (whatever
    ended it: ``None`` when it could not start or was interrupted)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    end: Callable[[ProcessResult | None], None] = _nothing


class Launcher(Protocol):
    """Starts a run's processes. One instance serves one run (a container launcher remembers
    the containers, network and keys it made, and `close` removes them)."""

    backend: str
    separate_hosts: bool
    """Each process is a host of its own (a container): a service's declared ports are free
    in it, and an MPI job's workers run as processes of their own that ``mpirun`` reaches."""
    builds_images: bool
    """A build op runs here (its image is built), instead of being refused or skipped."""
    skipped_build: str
    """What a build op prepared with ``skip_builds`` says when it is run (``{op}``: its name)."""

    def prepare(
        self,
        loaded: LoadedPolyaxonfile,
        options: PrepareOptions,
        jobs: Sequence[PreparedJob],
        specs: Sequence[Any],
        replicas: Sequence[str] = (),
    ) -> list[PreparedJob]:
        """``jobs`` (prepared as local processes; ``specs``: their ``container`` sections;
        ``replicas``: their names, for a distributed op) with what this launcher needs to
        start them. Raises what refuses them before anything runs."""
        ...

    def ready(
        self,
        jobs: Sequence[PreparedJob],
        on_line: LineCallback | None,
        cancel_event: threading.Event | None,
    ) -> RunResult | None:
        """After the init steps, before any process starts: None, or how the op ends here
        (no usable CLI, an image that is not there, its own image build failed)."""
        ...

    def cluster(
        self, plan: ReplicaPlan, run_uuid: str, on_line: LineCallback | None
    ) -> Cluster | None:
        """Where a distributed op's replicas reach each other; None: on loopback ports."""
        ...

    def process(self, launch: Launch) -> Process: ...

    def close(self) -> None:
        """Remove what this run started that may outlive its processes."""
        ...


class ProcessLauncher:
    """Every process on this machine, as the op's argv says (``python``: this interpreter)."""

    backend = LOCAL
    separate_hosts = False
    builds_images = False
    skipped_build = "build `{op}` skipped: the local runtime has no image builder"

    def prepare(
        self,
        loaded: LoadedPolyaxonfile,
        options: PrepareOptions,
        jobs: Sequence[PreparedJob],
        specs: Sequence[Any],
        replicas: Sequence[str] = (),
    ) -> list[PreparedJob]:
        return list(jobs)

    def ready(
        self,
        jobs: Sequence[PreparedJob],
        on_line: LineCallback | None,
        cancel_event: threading.Event | None,
    ) -> RunResult | None:
        return None

    def cluster(
        self, plan: ReplicaPlan, run_uuid: str, on_line: LineCallback | None
    ) -> Cluster | None:
        return None

    def process(self, launch: Launch) -> Process:
        return Process(list(launch.argv), python_env(launch.env), launch.job.cwd)

    def close(self) -> None:
        return None


PROCESS = ProcessLauncher()
"""The local backend's launcher (it holds nothing of a run: one serves every run)."""


def run_launched(
    launcher: Launcher,
    launch: Launch,
    *,
    timeout: float | None,
    on_line: LineCallback | None,
    secrets: Sequence[str],
    cancel_event: threading.Event | None,
    log_path: Path,
) -> ProcessResult:
    """Start ``launch`` with ``launcher`` and run it to its end (`run_process`: masked lines,
    its log, its timeout and stop); what the launcher made for it is undone whatever ended it.

    Raises:
        ProcessStartError: its command cannot start.
    """
    process = launcher.process(launch)
    result = None
    try:
        result = run_process(
            process.argv,
            env=process.env,
            cwd=process.cwd,
            timeout=timeout,
            on_line=on_line,
            secrets=secrets,
            cancel_event=cancel_event,
            log_path=log_path,
        )
    finally:
        process.end(result)
    return result
