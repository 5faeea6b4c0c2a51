"""The ``docker`` backend's launcher: every process of an op starts as a container of its image.

The shapes run as on the local backend (one process, replicas, a service: the same init steps,
env contract, decisions and outcome); `ContainerLauncher` only turns each process they ask for
into ``CLI run ... IMAGE ARGV`` (`polyaxon_prefect.containers.run_argv`), removed when it ends
whatever ended it. A distributed op gets a network of its own, each replica named on it as
its pod is in a cluster (`polyaxon_prefect.runtime.docker._container_replicas`); a service's
declared ports are free in its own network namespace and published on this machine's loopback
at the ports its URL names. A build op runs ``CLI build``; an op with its own ``build:``
section builds its image before it runs in it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.containers import container_name, remove_argv, run_argv
from polyaxon_prefect.distributed import named_cluster
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime._launcher import Launch, Process
from polyaxon_prefect.runtime._mpi import AS_ROOT, LAUNCHED
from polyaxon_prefect.runtime._one_process import prepare_job
from polyaxon_prefect.runtime._outcome import failed
from polyaxon_prefect.runtime._prepared import ImageRun, PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.docker._build_ops import BuildNotSupportedError
from polyaxon_prefect.runtime.docker._container import (
    CONTAINER_BACKEND,
    admitted_devices,
    build_target,
    container_environment,
    container_resources,
    for_image,
    image_argv,
    op_container,
    without_build_notes,
)
from polyaxon_prefect.runtime.docker._container_build import load_build
from polyaxon_prefect.runtime.docker._container_cli import (
    ContainerCli,
    ContainerCliError,
    find_cli,
    image_problem,
    session_labels,
    start_of_process,
)
from polyaxon_prefect.runtime.docker._container_network import RunNetwork, remove_network
from polyaxon_prefect.runtime.docker._container_replicas import (
    REPLICA_PULL,
    RSH_ARGS,
    make_ssh_keys,
    on_network,
    open_run_network,
    ssh_mounts,
)
from polyaxon_prefect.runtime.render._problem_collector import first
from polyaxon_prefect.tracking import OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.distributed import Cluster, ReplicaPlan
    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.runtime.render._options import PrepareOptions
    from polyaxon_prefect.runtime.session._process import ProcessResult

__all__ = ["ContainerLauncher"]

LineCallback = Callable[[str, str], None]


class ContainerLauncher:
    """Each process in a container of its image, through the ``docker`` or ``podman`` CLI.
    One instance serves one run: it remembers the run's network and SSH keys, which `close`
    removes (each container is removed as its process ends)."""

    backend = CONTAINER_BACKEND
    separate_hosts = True
    builds_images = True
    skipped_build = "build `{op}` skipped (--skip-builds)"

    def __init__(self) -> None:
        self.suffix = uuid.uuid4().hex[:6]
        self.cli: ContainerCli | None = None
        self.run_uuid: str | None = None
        self.network: RunNetwork | None = None
        self.ssh_keys: str | None = None
        """The run's SSH key folder (an MPI job), mounted at `SSH_DIR` in every replica."""
        self.mpi = False

    # ------------------------------------------------------------------------- prepare

    def prepare(
        self,
        loaded: LoadedPolyaxonfile,
        options: PrepareOptions,
        jobs: Sequence[PreparedJob],
        specs: Sequence[Any],
        replicas: Sequence[str] = (),
    ) -> list[PreparedJob]:
        """Every job with its image's settings; a build op as the image build it runs here,
        an op with its own ``build:`` with that build prepared to run first.

        Raises:
            PolyaxonfileError: a job or replica without ``container.image``; a build with no
                destination. `BuildNotSupportedError`: an own ``build:`` that builds no image.
            ContainerCliError: no usable container CLI.
        """
        if replicas:
            return self._replicas(jobs, specs, replicas)
        [job], [spec] = jobs, specs
        if job.is_build:
            if options.skip_builds:
                return [job]
            find_cli()
            tag, context = build_target(job)
            image = ImageRun(build_tag=tag, build_context=context)
            # a process runs (the build): not a skipped build op
            return [dataclasses.replace(job, is_build=False, image_run=image)]
        if not options.skip_builds and job.notes != without_build_notes(job):
            return [self._with_own_build(job, spec, loaded, options)]
        return [for_image(job, spec)]

    def _replicas(
        self, jobs: Sequence[PreparedJob], specs: Sequence[Any], names: Sequence[str]
    ) -> list[PreparedJob]:
        missing = [name for name, job in zip(names, jobs, strict=True) if not job.image]
        if missing:
            raise PolyaxonfileError(
                [
                    Problem(
                        f"replicas {', '.join(missing)} have no `container.image` to run on the "
                        "docker backend",
                        rule="no_image",
                        path=("component", "run"),
                        hint="set `image:` in each replica's container",
                    )
                ]
            )
        find_cli()
        prepared = []
        for job, spec in zip(jobs, specs, strict=True):
            cpus, memory, _gpus = container_resources(spec)  # its GPUs: its slice, when it runs
            image = ImageRun(pull=REPLICA_PULL, cpus=cpus, memory=memory)
            prepared.append(dataclasses.replace(job, image_run=image))
        return prepared

    def _with_own_build(
        self, job: PreparedJob, spec: Any, loaded: LoadedPolyaxonfile, options: PrepareOptions
    ) -> PreparedJob:
        """The op with its own ``build:`` section: the builder op prepared (`load_build`, with
        a run of its own), the op's image its ``destination``, built before the op runs."""
        operation = loaded.operation
        build = first(operation.build, getattr(operation.component, "build", None))
        builder_loaded = load_build(build, job.op_name, job.base_dir)
        builder_options = dataclasses.replace(options, run_context=None, params=None)
        builder = prepare_job(builder_loaded, builder_options, self)
        tag = builder.image_run.build_tag if builder.image_run is not None else None
        if tag is None:
            raise BuildNotSupportedError(
                [
                    Problem(
                        f"the `build:` of op `{job.op_name}` (`{build.hub_ref}`) is not an "
                        "image build",
                        rule="build_unsupported",
                        path=("component", "build", "hubRef"),
                        hint="use `hubRef: kaniko` with a `dockerfile` init step in its `runPatch`",
                    )
                ]
            )
        own = for_image(dataclasses.replace(job, image=tag, notes=without_build_notes(job)), spec)
        assert own.image_run is not None
        image = dataclasses.replace(own.image_run, pull="never", build_job=builder)
        return dataclasses.replace(own, image_run=image)

    # ------------------------------------------------------------------------- run

    def ready(
        self,
        jobs: Sequence[PreparedJob],
        on_line: LineCallback | None,
        cancel_event: threading.Event | None,
    ) -> RunResult | None:
        """A usable CLI and every image here (pulled by its policy); a build op: its
        Dockerfile and the CLI."""
        secrets = tuple(dict.fromkeys(s for job in jobs for s in job.secrets))
        images = [job.image_run or ImageRun() for job in jobs]
        for job, image in zip(jobs, images, strict=True):
            if image.build_context is not None:
                return self._build_ready(job, Path(image.build_context))
        try:
            self.cli = cli = find_cli()
            start_of_process(cli)
            wanted = dict.fromkeys(
                (job.image or "", image.pull) for job, image in zip(jobs, images, strict=True)
            )
            problems = (image_problem(cli, name, pull) for name, pull in wanted)
            problem = next((p for p in problems if p), None)
        except (ContainerCliError, OSError, subprocess.TimeoutExpired) as exc:
            problem = f"cannot run containers: {exc}"
        return failed(problem, secrets) if problem is not None else None

    def _build_ready(self, job: PreparedJob, context: Path) -> RunResult | None:
        if not (context / "Dockerfile").is_file():
            return failed(
                f"build `{job.op_name}`: no Dockerfile in {context} (give it a `dockerfile` "
                "init step)",
                job.secrets,
            )
        try:
            self.cli = find_cli()
        except ContainerCliError as exc:
            return failed(str(exc), job.secrets)
        return None

    def cluster(
        self, plan: ReplicaPlan, run_uuid: str, on_line: LineCallback | None
    ) -> Cluster | None:
        """The run's network (each replica at its container's hostname) and, for an MPI job,
        its SSH keys; None (the host's network, loopback ports) where no network can be made,
        which one line says."""
        cli = self.cli or find_cli()
        self.run_uuid, self.mpi = run_uuid, plan.kind in LAUNCHED
        names = [replica.name for replica in plan.replicas]
        self.network, note = open_run_network(
            cli, run_uuid, self.suffix, names, session_labels(run_uuid)
        )
        notes = [note]
        if self.mpi:
            self.ssh_keys, note = make_ssh_keys()
            notes.append(note)
        for line in notes:
            if line is not None and on_line is not None:
                on_line("stderr", line)
        if self.network is None:
            return None
        return named_cluster(plan, self.network.hostnames, run_uuid)

    def process(self, launch: Launch) -> Process:
        job = launch.job
        image = job.image_run or ImageRun()
        cli = self.cli or find_cli()
        if image.build_tag is not None and image.build_context is not None:
            return self._build_process(cli, job, image.build_tag, Path(image.build_context))
        env = dict(launch.env)
        if self.mpi:  # the image's user is usually root, whoever runs this CLI; the user's win
            for key, value in {**AS_ROOT, "OMPI_MCA_plm_rsh_args": RSH_ARGS}.items():
                env.setdefault(key, value)
        # a replica is given exactly its slice of the machine's GPUs (its env names them); a
        # job the GPUs it asks for, of those the machine's pool gave it
        visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
        gpus = len(visible) if launch.name else image.gpus
        inside, devices = admitted_devices(env, gpus)
        cli_env, names = container_environment(inside, job.context)
        run_uuid = self.run_uuid or job.context.uuid
        suffix = f"{launch.name}-{self.suffix}" if launch.name else uuid.uuid4().hex[:6]
        name = container_name(run_uuid, suffix)
        spec = op_container(
            job,
            names,
            name=name,
            run_uuid=run_uuid,
            argv=image_argv(launch.argv, image.python),
            mounts=ssh_mounts(self.ssh_keys),
            cpus=image.cpus,
            memory=image.memory,
            gpus=gpus,
            gpu_devices=tuple(devices),
            publish=launch.publish,
        )
        if launch.name:  # a replica: on the run's network under its hostname, or the host's
            spec = on_network(spec, self.network, launch.name)
        argv = run_argv(cli.kind, spec)
        argv[0] = cli.path

        def remove(_result: ProcessResult | None) -> None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                cli.run(*remove_argv(cli.kind, [name])[1:])

        return Process(argv, cli_env, job.context.run_artifacts_path, end=remove)

    def _build_process(
        self, cli: ContainerCli, job: PreparedJob, tag: str, context: Path
    ) -> Process:
        """``CLI build -t DESTINATION CONTEXT``: the Dockerfile its ``dockerfile`` init step
        wrote (or one already in the context), built here and tagged as the op's destination."""

        def record(result: ProcessResult | None) -> None:
            if result is not None and result.returncode == 0:  # what kaniko's pod reports
                outputs = job.context.run_outputs_path / OUTPUTS_FILE
                outputs.write_text(json.dumps({"destination": tag}), encoding="utf-8")

        argv = [cli.path, "build", "--tag", tag, str(context)]
        return Process(argv, dict(job.env), context, end=record)

    def close(self) -> None:
        if self.network is not None and self.cli is not None:
            remove_network(self.cli, self.network.name)
        if self.ssh_keys is not None:
            shutil.rmtree(self.ssh_keys, ignore_errors=True)
