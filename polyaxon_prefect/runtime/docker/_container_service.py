"""A ``kind: service`` op on the ``docker`` backend: its server in a container of its image.

The service is prepared and watched exactly as locally (`polyaxon_prefect.runtime._service`:
``globals.base_url``, the URL announced once its first port accepts connections,
``service.json``, the stop at its ``termination.timeout``, by Ctrl-C, by ``stop`` or when its
DAG's other ops have ended); only its process becomes a container. In its own network
namespace its declared ports are always free, so ``globals.ports`` are those, as in its pod,
and each is published on this machine's loopback at the local port the URL names (the
declared one when free here, else another: `local_ports`). The container is removed in every
ending, and labelled for the reapers as every container of a run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from polyaxon_prefect.containers import container_name, remove_argv, run_argv
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime._service import (
    PreparedService,
    ServiceProcess,
    execute_service,
    prepare_service,
)
from polyaxon_prefect.runtime.docker._container import (
    ContainerCliError,
    PreparedContainerJob,
    admitted_devices,
    container_environment,
    find_cli,
    for_image,
    image_problem,
    op_container,
    start_of_process,
)
from polyaxon_prefect.runtime.render._options import PrepareOptions

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "PreparedContainerService",
    "execute_container_service",
    "prepare_container_service",
]


@dataclass(frozen=True)
class PreparedContainerService(PreparedService):
    """A service prepared for a container: the local preparation plus its image's settings."""

    image_job: PreparedContainerJob | None = None
    """The same op prepared as a container job (its argv for the image, pull, resources)."""


def prepare_container_service(
    loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
) -> PreparedContainerService:
    """`prepare_service` with its declared ports inside, then its image's settings as a
    container job's (`for_image`).

    Raises:
        What `prepare_service` raises; `PolyaxonfileError` without ``container.image``;
        `ContainerCliError` when no container CLI is usable.
    """
    service = prepare_service(loaded, options, own_network=True)
    image = for_image(service, loaded)
    fields = {f.name: getattr(service, f.name) for f in dataclasses.fields(PreparedService)}
    return PreparedContainerService(**fields, image_job=image)


def _container(service: PreparedContainerService) -> Callable[[], ServiceProcess]:
    """How the service's container runs: ``CLI run ... --publish`` and its removal."""

    def make() -> ServiceProcess:
        job = service.image_job
        assert job is not None and job.image is not None
        try:
            cli = find_cli()
        except ContainerCliError as exc:
            message = f"cannot run containers: {exc}"
            return ServiceProcess([], {}, start=lambda: message)
        inside, devices = admitted_devices(service.env, job.gpus)
        env, names = container_environment(inside, service.context)
        name = container_name(service.context.uuid, uuid.uuid4().hex[:6])
        spec = op_container(
            job,
            names,
            name=name,
            run_uuid=service.context.uuid,
            argv=job.command,
            cpus=job.cpus,
            memory=job.memory,
            gpus=job.gpus,
            gpu_devices=tuple(devices),
            publish=tuple(zip(service.ports, service.declared_ports, strict=True)),
        )
        argv = run_argv(cli.kind, spec)
        argv[0] = cli.path

        def start() -> str | None:
            try:
                start_of_process(cli)
                return image_problem(cli, job.image or "", job.pull)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"cannot run containers: {exc}"

        def cleanup() -> None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                cli.run(*remove_argv(cli.kind, [name])[1:])

        return ServiceProcess(argv, env, cleanup=cleanup, start=start)

    return make


def execute_container_service(
    service: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
) -> RunResult:
    """`execute_service` with the service's process a container of its image."""
    if not isinstance(service, PreparedContainerService):
        raise TypeError("the docker backend runs services prepared by its own executor")
    return execute_service(
        service, on_line=on_line, cancel_event=cancel_event, process=_container(service)
    )
