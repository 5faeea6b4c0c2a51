"""What preparing an op yields and running it consumes: `PreparedJob`, its `InitStep`s and,
for a job run in its image, its `ImageRun`.

Plain frozen values in a module of their own, so that the steps that build a job (init, git,
GPUs, outcome), the shapes that run it and the launchers that start its processes share them
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime.logs._masking import redact_url_credentials
from polyaxon_prefect.specs import LOCAL

__all__ = ["ImageRun", "InitStep", "PreparedJob"]


@dataclass(frozen=True)
class InitStep:
    """One rendered ``init`` entry, ready to run before the main process.

    ``kind`` is the source (``git``, ``file``, ``paths``, ``artifacts``, ``dockerfile``,
    ``container``) or ``connection`` for a bare connection (its env is already in the job's env).
    ``spec`` is the rendered source value (a spec model, or a list for ``paths``); ``dest`` is
    the directory the step writes into.
    """

    index: int
    kind: str
    spec: Any
    dest: Path
    connection: str | None = None
    argv: tuple[str, ...] = ()
    explicit_dest: bool = False
    """``dest`` is an absolute ``path`` the user named (it may lie outside the run's context)."""

    def describe(self) -> str:
        url = getattr(self.spec, "url", None)
        what = {
            "git": lambda: f"git clone of {redact_url_credentials(url or '') or self.connection}",
            "file": lambda: f"file {getattr(self.spec, 'filename', None) or 'file'}",
            "dockerfile": lambda: "dockerfile",
            "paths": lambda: "paths copy",
            "artifacts": lambda: "artifacts copy",
            "container": lambda: f"init container `{' '.join(self.argv)[:80]}`",
            "connection": lambda: f"connection {self.connection}",
        }.get(self.kind, lambda: self.kind)()
        return f"init[{self.index}] ({what})"


@dataclass(frozen=True)
class ImageRun:
    """How a job's process runs in its image (the container launcher): what the image's
    section asks for, read once when the op is prepared."""

    python: str = "python3"
    """The image's interpreter, which a ``python`` argv runs (a local job runs this process's)."""
    pull: str = "missing"
    cpus: str | None = None
    memory: int | None = None
    gpus: int = 0
    build_tag: str | None = None
    """A build op run here: the image it builds and tags (its ``destination``)."""
    build_context: str | None = None
    """The folder it builds from (the kaniko ``-c`` argument; default the run's artifacts)."""
    build_job: PreparedJob | None = None
    """The op's own ``build:`` section, prepared as the build op it stands for: run first, the
    op then runs in the image it tagged."""


@dataclass(frozen=True)
class PreparedJob:
    """Everything needed to run one job locally; built by `prepare_job`, run by `execute_job`."""

    op_name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    image: str | None
    secrets: tuple[str, ...]
    timeout: float | None
    max_retries: int
    ttl: int | None
    cache_key: str | None
    cache_ttl: int | None
    params: dict[str, Any]
    outputs: list[Any]
    context: RunContext
    is_build: bool = False
    tags: tuple[str, ...] = ()
    init: tuple[InitStep, ...] = ()
    base_dir: Path | None = None
    notes: tuple[str, ...] = ()
    """Things the user should know that are not errors (e.g. "the build was skipped")."""
    run_kind: str = "job"
    """The run kind whose executor prepared it, and so runs it (`execute_job_op`)."""
    backend: str = LOCAL
    cache_read: bool = True
    """False: no cached success is reused (``run --no-cache``); a success is still recorded
    under ``cache_key``."""
    gpu_requests: tuple[int, ...] = ()
    """The GPUs each of its processes asks for (a job: one count; a distributed op: one per
    replica), taken from the machine's pool when it runs (`admitted`); empty: GPUs are not the
    local backend's to give (a cluster op)."""
    code_hash: str | None = None
    """The hash of the code it runs (`_code_hash.op_code`: its working folder's files, the
    interpreter, an image, a git commit), part of ``cache_key``; None when not hashed (the
    op's cache is off outside a DAG, or its folder is over the budget)."""
    image_run: ImageRun | None = None
    """Its image's settings when its processes start in containers (`ContainerLauncher`);
    None: they start on this machine."""
