"""The ``docker`` backend's image side: what a container of an op's ``container.image`` is.

Through the ``docker`` or ``podman`` CLI (`find_cli`): the op is prepared exactly as a local
one (params, templates, init steps, the env contract), then `for_image` adds its image's
settings (`ImageRun`), and each of its processes starts as a container of its image
(`polyaxon_prefect.runtime.docker._container_launcher`). The artifacts root and the
Polyaxonfile's folder are bound at the same absolute paths, so every path the templates
rendered (``globals``, the outputs and metrics files of `polyaxon_prefect.tracking`, the run
directory) means the same inside; outputs and metrics are read back from those files as for
a local job. The package's own source is bound read-only at `TRACKING_PATH` (on
``PYTHONPATH``), so ``from polyaxon_prefect import tracking`` works in any Python image.

Nothing a run starts outlives it: every container is labelled with the run session and the
process that started it (`polyaxon_prefect.containers`), removed when its CLI ends whatever
ended it (timeout, stop, Ctrl-C), removed by the session's reaper should this process be
killed (``kill -9``), and removed by the next process that runs containers when both died.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from polyaxon_prefect.containers import (
    ContainerRun,
    Mount,
    env_names,
    gpu_count,
    parse_cpus,
    parse_memory,
    pull_flag,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime._context import ENV_ARTIFACTS_ROOT, ENV_PROJECT, RunContext
from polyaxon_prefect.runtime._prepared import ImageRun, PreparedJob
from polyaxon_prefect.runtime.cache._code_rules import key_with_code
from polyaxon_prefect.runtime.docker._container_cli import (
    ContainerCli,
    ContainerCliError,
    find_cli,
    image_problem,
    session_labels,
    with_sbin,
)
from polyaxon_prefect.runtime.render._compat_path import COMPAT_DIR

__all__ = [
    "CONTAINER_BACKEND",
    "TRACKING_PATH",
    "ContainerCli",
    "ContainerCliError",
    "admitted_devices",
    "build_target",
    "container_environment",
    "container_mounts",
    "container_resources",
    "find_cli",
    "for_image",
    "image_argv",
    "image_problem",
    "op_container",
    "without_build_notes",
]

CONTAINER_BACKEND = "docker"
TRACKING_PATH = "/opt/polyaxon-prefect"
"""Where the package's source is bound (read-only) in every container, on ``PYTHONPATH``."""
_PYTHON_NAMES = ("python", "python3")


def without_build_notes(job: PreparedJob) -> tuple[str, ...]:
    return tuple(note for note in job.notes if not note.startswith("build skipped"))


def image_argv(argv: Sequence[str], python: str) -> list[str]:
    """``argv`` with the op's own interpreter name back: a local job runs ``python`` with this
    process's interpreter, an image with its own."""
    argv = list(argv)
    if argv and argv[0] == sys.executable:
        argv[0] = python
    return argv


def _python_of(spec: Any) -> str:
    raw = list(getattr(spec, "command", None) or [])
    return raw[0] if raw and raw[0] in _PYTHON_NAMES else "python3"


def for_image(job: PreparedJob, spec: Any) -> PreparedJob:
    """``job`` (prepared as locally) with its image's settings (``spec``: its ``container``
    section): its interpreter, the pull policy, CPUs, memory and GPUs, and its image in its
    code hash.

    Raises:
        PolyaxonfileError: no ``container.image``; `ContainerCliError`: no container CLI.
    """
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
    cpus, memory, gpus = container_resources(spec)
    image = ImageRun(
        python=_python_of(spec),
        pull=pull_flag(getattr(spec, "image_pull_policy", None)),
        cpus=cpus,
        memory=memory,
        gpus=gpus,
    )
    return dataclasses.replace(job, image_run=image, **_with_image_code(job, find_cli()))


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


def container_resources(spec: Any) -> tuple[str | None, int | None, int]:
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
    argv: Sequence[str],
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
        argv=tuple(argv),
        env=env_names,
        workdir=str(job.cwd),
        mounts=[*container_mounts(job), *mounts],
        labels=session_labels(run_uuid),
        pull="never",
        **extra,
    )


def _flag_value(argv: tuple[str, ...] | list[str], *flags: str) -> str | None:
    for index, arg in enumerate(argv[:-1]):
        if arg in flags:
            return argv[index + 1]
    for arg in argv:
        for flag in flags:
            if flag.startswith("--") and arg.startswith(f"{flag}="):
                return arg.split("=", 1)[1]
    return None


def build_target(job: PreparedJob) -> tuple[str, str]:
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
