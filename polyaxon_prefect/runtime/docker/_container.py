"""The ``docker`` backend: an op runs as a container of its ``container.image``.

Through the ``docker`` or ``podman`` CLI (`find_cli`): the op is prepared exactly as a local
job (`prepare_job`: params, templates, init steps, the env contract), then its command runs in
its image instead of on this machine. The artifacts root and the Polyaxonfile's folder are
bound at the same absolute paths, so every path the templates rendered (``globals``, the
outputs and metrics files of `polyaxon_prefect.tracking`, the run directory) means the same
inside; outputs and metrics are read back from those files as for a local job. The package's
own source is bound read-only at `TRACKING_PATH` (on ``PYTHONPATH``), so ``from
polyaxon_prefect import tracking`` works in any Python image.

Nothing a run starts outlives it: every container is labelled with the run session and the
process that started it (`polyaxon_prefect.containers`), removed when its CLI ends whatever
ended it (timeout, stop, Ctrl-C), removed by the session's reaper should this process be
killed (``kill -9``), and removed by the next process that runs containers when both died.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.containers import (
    ContainerRun,
    Mount,
    container_name,
    env_names,
    gpu_count,
    parse_cpus,
    parse_memory,
    pull_flag,
    remove_argv,
    run_argv,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime._context import ENV_ARTIFACTS_ROOT, ENV_PROJECT, RunContext
from polyaxon_prefect.runtime._errors import ProcessStartError
from polyaxon_prefect.runtime._job import LOG_FILE, _before_process, prepare_job
from polyaxon_prefect.runtime._outcome import failed, finish_ttl, job_outcome
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.cache._code_rules import key_with_code
from polyaxon_prefect.runtime.docker._build import BuildNotSupportedError
from polyaxon_prefect.runtime.docker._container_build import load_build
from polyaxon_prefect.runtime.docker._container_cli import (
    ContainerCli,
    ContainerCliError,
    find_cli,
    image_problem,
    reap_containers,
    session_labels,
    start_of_process,
    with_sbin,
)
from polyaxon_prefect.runtime.render._compat_path import COMPAT_DIR
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._problems import first
from polyaxon_prefect.runtime.session._process import run_process
from polyaxon_prefect.specs import Status
from polyaxon_prefect.tracking import OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "CONTAINER_BACKEND",
    "TRACKING_PATH",
    "ContainerCli",
    "ContainerCliError",
    "PreparedContainerJob",
    "admitted_devices",
    "container_environment",
    "container_mounts",
    "container_resources",
    "execute_container_job",
    "find_cli",
    "for_image",
    "image_command",
    "image_problem",
    "op_container",
    "prepare_container_job",
    "reap_containers",
    "session_labels",
    "start_of_process",
]

CONTAINER_BACKEND = "docker"
TRACKING_PATH = "/opt/polyaxon-prefect"
"""Where the package's source is bound (read-only) in every container, on ``PYTHONPATH``."""
_PYTHON_NAMES = ("python", "python3")


@dataclass(frozen=True)
class PreparedContainerJob(PreparedJob):
    """A job prepared for a container: what a local job has, plus the image's settings."""

    command: tuple[str, ...] = ()
    """The op's argv as the image runs it (``python`` stays ``python``)."""
    pull: str = "missing"
    cpus: str | None = None
    memory: int | None = None
    gpus: int = 0
    build_tag: str | None = None
    """A build op run here: the image it builds and tags (its ``destination``)."""
    build_context: str | None = None
    """The folder it builds from (the kaniko ``-c`` argument; default the run's artifacts)."""
    build_job: PreparedContainerJob | None = None
    """The op's own ``build:`` section, prepared as the build op it stands for: run first, the
    op then runs in the image it tagged."""


def _notes_without_build(job: PreparedJob) -> tuple[str, ...]:
    return tuple(note for note in job.notes if not note.startswith("build skipped"))


def _container_spec(loaded: LoadedPolyaxonfile) -> Any:
    component = loaded.operation.component
    run = getattr(component, "run", None)
    container = getattr(run, "container", None)
    return None if isinstance(container, str) else container


def image_command(job: PreparedJob, spec: object = None) -> tuple[str, ...]:
    """The job's argv with the op's own interpreter name back: a local job runs ``python``
    with this process's interpreter, an image with its own."""
    argv = list(job.argv)
    if argv and argv[0] == sys.executable:
        raw = list(getattr(spec, "command", None) or [])
        first = raw[0] if raw and raw[0] in _PYTHON_NAMES else "python3"
        argv[0] = first
    return tuple(argv)


def prepare_container_job(
    loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
) -> PreparedContainerJob:
    """Prepare ``loaded`` as a local job, then for its image.

    Raises:
        What `prepare_job` raises; `PolyaxonfileError` for an op without ``container.image``;
        `ContainerCliError` when no container CLI is usable.
    """
    job = prepare_job(loaded, dataclasses.replace(options, skip_builds=True))
    fields = {f.name: getattr(job, f.name) for f in dataclasses.fields(PreparedJob)}
    if not options.skip_builds and not job.is_build and job.notes != _notes_without_build(job):
        return _with_own_build(job, loaded, options)
    if job.is_build:
        if options.skip_builds:
            return PreparedContainerJob(**fields)
        find_cli()
        tag, context = _build_target(job)
        fields["is_build"] = False  # a process runs (the build): not a skipped build op
        return PreparedContainerJob(**fields, build_tag=tag, build_context=context)
    return for_image(job, loaded)


def for_image(job: PreparedJob, loaded: LoadedPolyaxonfile) -> PreparedContainerJob:
    """``job`` (prepared as locally) with its image's settings: its argv for the image, the
    pull policy, CPUs, memory and GPUs.

    Raises:
        PolyaxonfileError: no ``container.image``; `ContainerCliError`: no container CLI.
    """
    spec = _container_spec(loaded)
    fields = {f.name: getattr(job, f.name) for f in dataclasses.fields(PreparedJob)}
    if not job.image:
        raise PolyaxonfileError(
            [
                Problem(
                    f"op `{job.op_name}` has no `container.image` to run on the docker backend",
                    rule="no_image",
                    path=("component", "run", "container", "image"),
                    hint="set `image:` (an image on this machine or in a registry it reaches)",
                )
            ]
        )
    fields.update(_with_image_code(job, find_cli()))
    cpus, memory, gpus = container_resources(spec)
    return PreparedContainerJob(
        **fields,
        command=image_command(job, spec),
        pull=pull_flag(getattr(spec, "image_pull_policy", None)),
        cpus=cpus,
        memory=memory,
        gpus=gpus,
    )


def _with_image_code(job: PreparedJob, cli: ContainerCli) -> dict[str, Any]:
    """The op's code hash and cache key with its image in them: its id (a digest) when the
    image is on this machine, else its reference (an image pulled later is then a new key
    once: never a hit on another image's outputs)."""
    if job.code_hash is None or not job.image:
        return {}
    inspected = cli.run("image", "inspect", "--format", "{{.Id}}", job.image)
    found = inspected.stdout.strip() if inspected.returncode == 0 else ""
    identity = found.splitlines()[0] if found else job.image
    code = hashlib.sha256(f"{job.code_hash}|image:{identity}".encode()).hexdigest()
    key = key_with_code(job.cache_key, code) if job.cache_key is not None else None
    return {"code_hash": code, "cache_key": key}


def container_resources(spec: object) -> tuple[str | None, int | None, int]:
    """The CPUs, memory (bytes) and GPUs a container section asks for, as the container CLI
    takes them: its limits, else its requests (a pod is held to its limits)."""
    resources = getattr(spec, "resources", None)
    limits: Mapping[str, Any] = getattr(resources, "limits", None) or {}
    requests: Mapping[str, Any] = getattr(resources, "requests", None) or {}
    return (
        parse_cpus(limits.get("cpu", requests.get("cpu"))),
        parse_memory(limits.get("memory", requests.get("memory"))),
        gpu_count(limits) or gpu_count(requests),
    )


def admitted_devices(env: Mapping[str, str], gpus: int) -> tuple[dict[str, str], list[str]]:
    """The environment inside an op's container and the host GPUs it is given: those the
    machine's pool gave the op (`_gpu_admit.admitted`, its ``CUDA_VISIBLE_DEVICES``), which
    the container sees numbered from 0."""
    devices = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
    inside = dict(env)
    if gpus and devices:
        inside["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(devices)))
    return inside, devices


def op_container(
    job: PreparedJob,
    env_names: Any,
    *,
    name: str,
    run_uuid: str,
    argv: tuple[str, ...],
    mounts: tuple[Mount, ...] = (),
    **extra: Any,
) -> ContainerRun:
    """What every container of an op (its job, a service, each replica) shares: the image,
    the argv, the environment by name, the working directory, the run's folders mounted at
    their own paths (plus ``mounts``), the session's labels for the reaper, and no pull (the
    image's pull policy was applied when the op was prepared, `image_problem`); ``extra`` are
    the other `ContainerRun` fields (resources, ports, network)."""
    return ContainerRun(
        name=name,
        image=job.image or "",
        argv=argv,
        env=env_names,
        workdir=str(job.cwd),
        mounts=[*container_mounts(job), *mounts],
        labels=session_labels(run_uuid),
        pull="never",
        **extra,
    )


def _with_own_build(
    job: PreparedJob, loaded: LoadedPolyaxonfile, options: PrepareOptions
) -> PreparedContainerJob:
    """The op with its own ``build:`` section: the builder op prepared (`load_build`, with a
    run of its own), the op's image its ``destination``, built before the op runs."""
    operation = loaded.operation
    build = first(operation.build, getattr(operation.component, "build", None))
    builder_loaded = load_build(build, job.op_name, job.base_dir)
    builder = prepare_container_job(
        builder_loaded, dataclasses.replace(options, run_context=None, params=None)
    )
    if builder.build_tag is None:
        raise BuildNotSupportedError(
            [
                Problem(
                    f"the `build:` of op `{job.op_name}` (`{build.hub_ref}`) is not an image build",
                    rule="build_unsupported",
                    path=("component", "build", "hubRef"),
                    hint="use `hubRef: kaniko` with a `dockerfile` init step in its `runPatch`",
                )
            ]
        )
    own = dataclasses.replace(job, image=builder.build_tag, notes=_notes_without_build(job))
    return dataclasses.replace(for_image(own, loaded), pull="never", build_job=builder)


def _flag_value(argv: tuple[str, ...] | list[str], *flags: str) -> str | None:
    for index, arg in enumerate(argv[:-1]):
        if arg in flags:
            return argv[index + 1]
    for arg in argv:
        for flag in flags:
            if flag.startswith("--") and arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
    return None


def _build_target(job: PreparedJob) -> tuple[str, str]:
    """The tag and context folder of a build op: kaniko's ``-d``/``-c`` arguments as its
    component rendered them (the registry connection's URL included), else its
    ``destination`` param and the run's artifacts folder.

    Raises:
        PolyaxonfileError: no destination to tag the image as.
    """
    tag = _flag_value(job.argv, "-d", "--destination")
    context = _flag_value(job.argv, "-c", "--context")
    if not tag:
        value = job.params.get("destination")
        tag = str(value.get("name") or "") if isinstance(value, dict) else str(value or "")
    if not tag:
        raise PolyaxonfileError(
            [
                Problem(
                    f"build `{job.op_name}` has no `destination` to tag its image as",
                    rule="build_destination",
                    path=("params", "destination"),
                    hint="give `destination: {value: {name: IMAGE:TAG}}`",
                )
            ]
        )
    return tag, context or str(job.context.artifacts_path)


def container_mounts(job: PreparedJob) -> list[Mount]:
    """The artifacts root and the Polyaxonfile's folder at their own paths; the package's
    source, read-only, for ``polyaxon_prefect.tracking``."""
    paths = [job.context.artifacts_root]
    if job.base_dir is not None:
        paths.append(job.base_dir)
    if job.cwd.is_dir():
        paths.append(job.cwd)
    kept: list[Path] = []
    for path in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(parent) for parent in kept):
            kept.append(path)
    package = Path(__file__).resolve().parents[2]  # the polyaxon_prefect package
    return [
        *(Mount(str(path)) for path in kept),
        Mount(str(package), f"{TRACKING_PATH}/polyaxon_prefect", read_only=True),
    ]


def _without_compat_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the stand-in ``polyaxon`` packages the local preparation put on
    ``PYTHONPATH`` (`compat_env`): that check was of this machine's Python, not the image's,
    and in the image they would come before its site-packages, shadowing a real ``polyaxon``
    (images that ran on Polyaxon have it). What remains is the op's own ``PYTHONPATH``, if any."""
    value = env.get("PYTHONPATH")
    if value is None:
        return env
    compat = str(COMPAT_DIR)
    entries = [e for e in value.split(os.pathsep) if e and not e.startswith(compat)]
    if not entries or os.pathsep.join(entries) == os.environ.get("PYTHONPATH", ""):
        env.pop("PYTHONPATH")
    else:
        env["PYTHONPATH"] = os.pathsep.join(entries)
    return env


def container_environment(
    env: Mapping[str, str], context: RunContext
) -> tuple[dict[str, str], list[str]]:
    """The CLI's environment and the names it passes on: the op's own variables and the
    run's contract (never on the command line, where other users could read a secret)."""
    env = _without_compat_path(dict(env))
    always = [*context.env_vars(), ENV_ARTIFACTS_ROOT, ENV_PROJECT]  # the run's contract
    names = sorted({*env_names(env, os.environ), *(n for n in always if n in env)})
    if "PATH" not in names:
        env = with_sbin(env)
    if "PYTHONPATH" not in names:
        env["PYTHONPATH"] = TRACKING_PATH
        names.append("PYTHONPATH")
    return env, names


def execute_container_job(
    job: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
) -> RunResult:
    """Run ``job`` (a `PreparedContainerJob`) in its image, as `execute_job` runs a local one:
    init steps here, the command in the container, outputs and metrics read back after.
    Never raises for what the op did; its container is removed whatever ended it."""
    if not isinstance(job, PreparedContainerJob):
        raise TypeError("the docker backend runs jobs prepared by `prepare_container_job`")
    if job.is_build:
        return RunResult(Status.SKIPPED, message=f"build `{job.op_name}` skipped (--skip-builds)")
    ended = _own_build(job, on_line, cancel_event)
    if ended is None:
        ended = _before_process(job, on_line, cancel_event)
    if ended is None and job.build_tag is not None:
        ended = _build(job, on_line, cancel_event)
    elif ended is None:
        try:
            cli = find_cli()
            start_of_process(cli)
            problem = image_problem(cli, job.image or "", job.pull)
        except (ContainerCliError, OSError, subprocess.TimeoutExpired) as exc:
            problem = f"cannot run containers: {exc}"
        if problem is not None:
            ended = failed(problem, job.secrets)
        else:
            ended = _run_container(cli, job, on_line, cancel_event)
    finish_ttl(job)
    return ended


def _own_build(
    job: PreparedContainerJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult | None:
    """The op's own ``build:`` first (its init steps, then the image build); None once the
    image is built, else the op's failure saying the build failed."""
    builder = job.build_job
    if builder is None:
        return None
    ended = _before_process(builder, on_line, cancel_event)
    if ended is None:
        ended = _build(builder, on_line, cancel_event)
    if ended.status == Status.SUCCEEDED:
        return None
    if ended.status == Status.STOPPED:
        return ended
    return failed(f"the build of `{job.op_name}`'s image failed: {ended.message}", job.secrets)


def _build(
    job: PreparedContainerJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    """``CLI build -t DESTINATION CONTEXT``: the Dockerfile its ``dockerfile`` init step wrote
    (or one already in the context), built here and tagged as the op's destination."""
    assert job.build_tag is not None and job.build_context is not None
    context = Path(job.build_context)
    if not (context / "Dockerfile").is_file():
        return failed(
            f"build `{job.op_name}`: no Dockerfile in {context} (give it a `dockerfile` init step)",
            job.secrets,
        )
    try:
        cli = find_cli()
        result = run_process(
            [cli.path, "build", "--tag", job.build_tag, str(context)],
            env=dict(job.env),
            cwd=context,
            timeout=job.timeout,
            on_line=on_line,
            secrets=job.secrets,
            cancel_event=cancel_event,
            log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
        )
    except (ContainerCliError, ProcessStartError) as exc:
        return failed(str(exc), job.secrets)
    if result.returncode == 0:  # what kaniko's pod reports: the image it pushed
        outputs = job.context.run_outputs_path / OUTPUTS_FILE
        outputs.write_text(json.dumps({"destination": job.build_tag}), encoding="utf-8")
    return job_outcome(job, result)


def _run_container(
    cli: ContainerCli,
    job: PreparedContainerJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    assert job.image is not None
    inside, devices = admitted_devices(job.env, job.gpus)
    env, names = container_environment(inside, job.context)
    name = container_name(job.context.uuid, uuid.uuid4().hex[:6])
    spec = op_container(
        job,
        names,
        name=name,
        run_uuid=job.context.uuid,
        argv=job.command,
        cpus=job.cpus,
        memory=job.memory,
        gpus=job.gpus,
        gpu_devices=tuple(devices),
    )
    argv = run_argv(cli.kind, spec)
    argv[0] = cli.path
    try:
        result = run_process(
            argv,
            env=env,
            cwd=job.context.run_artifacts_path,
            timeout=job.timeout,
            on_line=on_line,
            secrets=job.secrets,
            cancel_event=cancel_event,
            log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
        )
    except ProcessStartError as exc:
        return failed(str(exc), job.secrets)
    finally:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            cli.run(*remove_argv(cli.kind, [name])[1:])
    return job_outcome(job, result)
