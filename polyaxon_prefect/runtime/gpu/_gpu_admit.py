"""GPUs of a local op: its request read and checked when it is prepared, its GPUs taken when it
runs (`admitted`), and the hint a failure gets when it asked for none but looked for CUDA.

Every op the local backend runs (a job, a DAG op, a sweep trial, a distributed op's replicas)
goes through `execute_job_op`, and so through `admitted`: one scheduler for all of them, over
the machine's one pool (`polyaxon_prefect.runtime.gpu._gpu_locks`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.distributed import (
    NO_GPU_HINT,
    SHARING_ENV,
    NotEnoughGpusError,
    capacity_problem,
    container_gpus,
    gpu_request,
    looks_for_cuda,
    plan_replicas,
    sharing,
    visible_env,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem, UnsupportedFeatureError
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.gpu._gpu_locks import (
    LOCKS_ENV,
    acquire_gpus,
    lock_dir,
    lock_dir_problem,
    this_machine_gpus,
)
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._problem_collector import PathT, Problems
from polyaxon_prefect.runtime.render._render_sections import render_scalar
from polyaxon_prefect.specs import LoadedPolyaxonfile, Status

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import PreparedJob

__all__ = [
    "admitted",
    "check_gpu_capacity",
    "check_gpus_up_front",
    "container_gpu_request",
    "gpu_holder",
    "with_no_gpu_hint",
]

RESOURCES: PathT = ("component", "run", "container", "resources")


def container_gpu_request(
    container: object, context: Mapping[str, Any], path: PathT, loaded: object
) -> int:
    """The GPUs a container asks for (a template rendered with ``context``).

    Raises:
        UnsupportedFeatureError: not a whole number (rule ``invalid_gpus``), located.
    """
    value = container_gpus(container)
    if isinstance(value, int):
        return value
    problems = Problems()
    rendered = render_scalar(value, context, path, problems, str)
    text = str(rendered).strip() if rendered is not None else ""
    if not problems.items and text.isdigit():
        return int(text)
    problem = problems.items[0] if problems.items else None
    raise UnsupportedFeatureError(
        locate_problems(
            [
                problem
                or Problem(
                    f"the container asks for {text!r} GPUs; a GPU count is a whole number",
                    rule="invalid_gpus",
                    path=path,
                    value=text,
                    hint="set `nvidia.com/gpu` to 0, 1, 2...",
                )
            ],
            loaded,
        )
    )


def check_gpu_capacity(
    requests: Sequence[int], path: PathT, loaded: object, names: Sequence[str] = ()
) -> None:
    """Refuse, before anything starts, ``requests`` that this machine can never meet (located
    at ``path``, the ``resources`` line), and a bad ``POLYAXON_PREFECT_GPU_SHARING``.

    Raises:
        NotEnoughGpusError: more GPUs than the machine has (times the sharing).
    """
    if not any(requests):
        return
    try:
        per_gpu = sharing(os.environ.get(SHARING_ENV))
    except ValueError as exc:
        raise UnsupportedFeatureError(
            [Problem(str(exc), rule="invalid_gpu_sharing", hint="unset it, or set 2, 3...")]
        ) from None
    locks = lock_dir_problem(lock_dir())
    if locks is not None:  # the op would fail on it when it starts
        raise UnsupportedFeatureError(
            [
                Problem(
                    locks,
                    rule="invalid_gpu_locks",
                    hint="name a folder (made if missing), or unset it"
                    if os.environ.get(LOCKS_ENV)
                    else f"remove it (it is made again, 0700), or name a folder in {LOCKS_ENV}",
                )
            ]
        )
    problem = capacity_problem(requests, this_machine_gpus(), per_gpu, path, names)
    if problem is not None:
        raise NotEnoughGpusError(locate_problems([problem], loaded))


def gpu_holder(job: PreparedJob) -> str:
    """How the op names itself in its lock files, for the wait reason of the others."""
    return f"{job.op_name} ({job.context.uuid[:8]})"


def _with_devices(job: PreparedJob, devices: list[list[str]]) -> PreparedJob:
    """``job`` with each process shown its own devices (`visible_env`)."""
    replicas = getattr(job, "replicas", None)
    if replicas:
        mine = [
            dataclasses.replace(one, gpus=",".join(ids))
            for one, ids in zip(replicas, devices, strict=True)
        ]
        return dataclasses.replace(job, replicas=tuple(mine))  # type: ignore[call-arg]
    return dataclasses.replace(job, env={**job.env, **visible_env(devices[0] if devices else [])})


@contextlib.contextmanager
def admitted(
    job: PreparedJob,
    on_wait: Callable[[str], None] | None,
    cancel_event: threading.Event | None,
) -> Iterator[PreparedJob | None]:
    """``job`` with its GPUs, held until the block ends; None when it was cancelled while it
    waited. An op the local backend does not manage (``gpu_requests`` empty) is unchanged."""
    if not job.gpu_requests:
        yield job
        return
    lease = acquire_gpus(
        job.gpu_requests, gpu_holder(job), on_wait=on_wait, cancel_event=cancel_event
    )
    if lease is None:
        yield None
        return
    try:
        yield _with_devices(job, lease.devices)
    finally:
        lease.release()


def with_no_gpu_hint(job: PreparedJob, raw: RunResult, result: RunResult) -> RunResult:
    """``result`` (the op's failure) with `NO_GPU_HINT` when the op asked for no GPU and its
    process's last lines (``raw``, what the executor reported) show it looked for CUDA."""
    if result.status != Status.FAILED or not job.gpu_requests or any(job.gpu_requests):
        return result
    process = raw.process
    lines = [raw.message, result.message]
    if process is not None:
        lines += [*process.stderr_tail, *process.stdout_tail]
    if not looks_for_cuda(lines) or NO_GPU_HINT in result.message:
        return result
    return result.with_(message=f"{result.message.rstrip()}\nhint: {NO_GPU_HINT}")


def _requests_of(run: object, path: PathT) -> list[tuple[list[int], PathT, list[str]]]:
    """Each process group's literal GPU requests under ``run`` (a job, a distributed op, the
    ops of a DAG, nested), with the path of its ``resources``; templated counts are left to
    the op's own preparation."""
    operations = getattr(run, "operations", None)
    if operations is not None:  # a DAG: its ops' own
        found = []
        for index, op in enumerate(operations if isinstance(operations, list) else []):
            component = getattr(op, "component", None)
            if component is not None and not isinstance(op.component, str):
                where = (*path, "operations", index, "component", "run")
                found += _requests_of(component.run, where)
        return found
    try:  # a distributed op: its replicas' (a job has no replica group)
        plan = plan_replicas(run)
        asks = {r.name: gpu_request(r) for r in plan.replicas}
    except PolyaxonfileError:
        plan = None
    if plan is not None:
        biggest = max(plan.replicas, key=lambda r: asks[r.name])
        where = (*path, biggest.type, "container", "resources")
        return [(list(asks.values()), where, list(asks))]
    count = container_gpus(getattr(run, "container", None))
    return [([count], (*path, "container", "resources"), [])] if isinstance(count, int) else []


def check_gpus_up_front(loaded: LoadedPolyaxonfile) -> None:
    """Refuse a sweep or a DAG one of whose ops asks for more GPUs than this machine has,
    once, before any flow run exists (each trial or op would otherwise fail alike, one by one).

    Raises:
        NotEnoughGpusError: every such op's problem, located at its ``resources``.
    """
    component = getattr(loaded.operation, "component", None)
    if component is None:
        return
    problems: list[Problem] = []
    for requests, path, names in _requests_of(component.run, ("component", "run")):
        try:
            check_gpu_capacity(requests, path, loaded, names)
        except NotEnoughGpusError as exc:
            problems += exc.problems
    if problems:
        raise NotEnoughGpusError(problems)
