"""The ``docker`` backend of the distributed kinds: one container per replica.

The replicas are prepared and launched exactly as on the local backend
(`polyaxon_prefect.runtime._replicas`: the same plan, the same env contract, ``TF_CONFIG`` /
``MASTER_ADDR`` on loopback ports, the same decisions when one ends); only each replica's
process becomes a container of its image. The run gets a network of its own
(`polyaxon_prefect.runtime.docker._container_network`): each replica's container is named
``plx-<run>-<type>-<index>`` on it, as its pod is in a cluster, and the contract names those
hosts on the framework's usual port (``MASTER_ADDR=plx-<run>-master-0``, ``MASTER_PORT=23456``),
resolved by the network's DNS or, where it has none (Podman's CNI backend), by a static address
per replica and ``/etc/hosts`` entries. Where no network can be created, the containers share
the host's network on the loopback ports of the local backend, and one line says so. The
network is removed with the containers whatever ended the run (the reaper removes both by
label). A replica's GPUs (its slice of this machine's, as locally) become its devices, seen
inside as ``0..n-1``.

An ``mpijob`` runs as the MPI operator (v2) runs it: the launcher and every worker are
containers of their images on the run's network; the launcher's ``mpirun`` gets the hostfile
naming the workers' hostnames (``plx-<run>-worker-0 slots=N``) and reaches them over SSH, which
the images bring (workers usually run ``/usr/sbin/sshd -De``): a key pair made for the run is
mounted in every replica at `SSH_DIR` (``id_rsa``, ``id_rsa.pub``, ``authorized_keys``,
the operator's secret), with the operator's ``OMPI_MCA_plm_rsh_args``. The job ends with the
launcher; the workers are stopped then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from polyaxon_prefect.containers import (
    ContainerRun,
    Mount,
    container_name,
    gpu_flags,
    remove_argv,
    run_argv,
)
from polyaxon_prefect.distributed import named_cluster
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.runtime._mpi import AS_ROOT, LAUNCHED
from polyaxon_prefect.runtime._outcome import failed, finish_ttl
from polyaxon_prefect.runtime._prepared import PreparedJob
from polyaxon_prefect.runtime._replicas import (
    PreparedReplica,
    PreparedReplicas,
    _before_replicas,
    _launch,
    _outcome,
    _relay,
    _Replicas,
    _wait,
    prepare_replicas,
)
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.docker._container import (
    ContainerCli,
    ContainerCliError,
    container_environment,
    container_resources,
    find_cli,
    image_command,
    image_problem,
    op_container,
    session_labels,
    start_of_process,
)
from polyaxon_prefect.runtime.docker._container_cli import key_folder
from polyaxon_prefect.runtime.docker._container_network import (
    NetworkError,
    RunNetwork,
    open_network,
    remove_network,
)
from polyaxon_prefect.runtime.render._options import PrepareOptions

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "CONTAINER_REPLICA_KINDS",
    "PreparedContainerReplicas",
    "execute_container_replicas",
    "prepare_container_replicas",
]

_PULL = "missing"
"""Replicas pull as ``IfNotPresent`` (their ``imagePullPolicy`` is not read yet)."""
CONTAINER_REPLICA_KINDS = ("tfjob", "pytorchjob", "mxjob", "xgbjob", "paddlejob", "mpijob")
SSH_DIR = "/root/.ssh"
"""Where every MPI replica finds the run's key pair: a path inside the image (root's
``.ssh``), the MPI operator's default ``sshAuthMountPath``, so images made for the operator
find their keys where they expect them."""
RSH_ARGS = "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
"""``OMPI_MCA_plm_rsh_args``: the operator's retries while the workers' sshd starts; the
hosts are new on every run, so no known host key can be checked."""


@dataclass(frozen=True)
class PreparedContainerReplicas(PreparedReplicas):
    """A distributed op prepared for containers: the local preparation, every image checked."""


def prepare_container_replicas(
    loaded: LoadedPolyaxonfile, options: PrepareOptions = PrepareOptions()
) -> PreparedContainerReplicas:
    """`prepare_replicas`, then: every replica has an image, and a container CLI is usable.

    Raises:
        What `prepare_replicas` raises; `PolyaxonfileError` for a replica without an image;
        `ContainerCliError`.
    """
    prepared = prepare_replicas(loaded, options, every_replica=True)
    missing = [one.name for one in prepared.replicas if not one.job.image]
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
    fields = {f.name: getattr(prepared, f.name) for f in dataclasses.fields(PreparedReplicas)}
    return PreparedContainerReplicas(**fields)


class _ContainerReplicas(_Replicas):
    """The local replicas' threads, each running its replica in a container."""

    def __init__(
        self,
        prepared: PreparedReplicas,
        on_line: Callable[[str, str], None] | None,
        cli: ContainerCli,
    ) -> None:
        super().__init__(prepared, on_line)
        self.cli = cli
        self.names: list[str] = []
        self.suffix = uuid.uuid4().hex[:6]
        self.network: RunNetwork | None = None
        self.ssh_keys: str | None = None
        """The run's SSH key folder (an MPI job), mounted at `SSH_DIR` in every replica."""

    def _on_network(self, spec: ContainerRun, replica: str) -> ContainerRun:
        """``spec`` on the host's network, or on the run's under the replica's hostname (with
        its static address and every replica's ``/etc/hosts`` entry, where there is no DNS)."""
        network = self.network
        if network is None:
            return dataclasses.replace(spec, network="host")
        host = network.hostnames[replica]
        return dataclasses.replace(
            spec,
            network=network.name,
            hostname=host,
            aliases=(host,),
            ip=network.addresses.get(host),
            hosts=dict(network.addresses),
        )

    def _run(self, one: PreparedReplica, argv: list[str], env: Mapping[str, str]) -> None:
        job = one.job
        devices = [d for d in one.gpus.split(",") if d]
        inside = dict(env)
        inside["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(devices)))
        cli_env, names = container_environment(inside, job.context)
        name = container_name(self.prepared.context.uuid, f"{one.name}-{self.suffix}")
        self.names.append(name)
        cpus, memory, _gpus = container_resources(getattr(one.replica.spec, "container", None))
        spec = op_container(
            job,
            names,
            name=name,
            run_uuid=self.prepared.context.uuid,
            argv=image_command(dataclasses.replace(job, argv=argv)),
            mounts=tuple(self._ssh_mounts()),
            cpus=cpus,
            memory=memory,
        )
        spec = self._on_network(spec, one.name)
        command = run_argv(self.cli.kind, spec)
        command[0] = self.cli.path
        if devices:  # this replica's slice, not the first GPUs of the machine
            at = command.index(spec.image)
            command[at:at] = gpu_flags(self.cli.kind, len(devices), devices)
        super()._run(one, command, cli_env)

    def _ssh_mounts(self) -> list[Mount]:
        return [Mount(self.ssh_keys, SSH_DIR, read_only=True)] if self.ssh_keys else []

    def make_ssh_keys(self) -> str | None:
        """An MPI job's key pair, in a private folder outside the artifacts (a secret); None,
        or the line saying why the images' own SSH setup is left to work alone."""
        folder = key_folder()
        key = Path(folder) / "id_rsa"
        try:
            made = subprocess.run(
                ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-C", "mpi", "-f", str(key)],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            return f"no SSH key pair for mpirun ({exc}): the images' own SSH setup is used"
        if made.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            return f"no SSH key pair for mpirun ({made.stderr.strip()}): the images' own is used"
        shutil.copyfile(f"{key}.pub", Path(folder) / "authorized_keys")
        (Path(folder) / "authorized_keys").chmod(0o600)
        self.ssh_keys = folder
        return None

    def remove(self) -> None:
        if self.names:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.cli.run(*remove_argv(self.cli.kind, self.names)[1:])
        if self.network is not None:
            remove_network(self.cli, self.network.name)
        if self.ssh_keys is not None:
            shutil.rmtree(self.ssh_keys, ignore_errors=True)

    def open_network(self) -> str | None:
        """Create the run's network; None, or the line saying why the host's is used."""
        run = self.prepared.context.uuid
        try:
            self.network = open_network(
                self.cli,
                run,
                self.suffix,
                [one.name for one in self.prepared.replicas],
                session_labels(run),
            )
        except NetworkError as exc:
            return f"no network of its own for this run ({exc}): replicas share the host's"
        return None


def execute_container_replicas(
    prepared: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
) -> RunResult:
    """Start every replica of ``prepared`` in its image and wait for the job's end, as
    `execute_replicas` does with processes; no container outlives it."""
    if not isinstance(prepared, PreparedContainerReplicas) or prepared.plan is None:
        raise TypeError("the docker backend runs replicas prepared by its own executor")
    ended = _before_replicas(prepared, on_line, cancel_event)
    if ended is None:
        try:
            cli = find_cli()
            start_of_process(cli)
            images = dict.fromkeys(one.job.image or "" for one in prepared.replicas)
            problems = [image_problem(cli, image, _PULL) for image in images]
            problem = next((p for p in problems if p), None)
        except (ContainerCliError, OSError, subprocess.TimeoutExpired) as exc:
            problem = f"cannot run containers: {exc}"
        if problem is not None:
            ended = failed(problem, prepared.secrets)
        else:
            ended = _run(cli, prepared, on_line, cancel_event)
    finish_ttl(prepared)
    return ended


def _run(
    cli: ContainerCli,
    prepared: PreparedContainerReplicas,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    plan = prepared.plan
    assert plan is not None
    group = _ContainerReplicas(prepared, on_line, cli)
    try:
        notes = [group.open_network()]
        if plan.kind in LAUNCHED:
            notes.append(group.make_ssh_keys())
        for note in notes:
            if note is not None and on_line is not None:
                on_line("stderr", note)
        network = group.network
        cluster = None
        if network is not None:
            cluster = named_cluster(plan, network.hostnames, prepared.context.uuid)
        launch = _launch(prepared, plan, cluster)
        if plan.kind in LAUNCHED:
            for _, env in launch.values():
                # the image's user is usually root, whoever runs this CLI; the user's values win
                for key, value in {**AS_ROOT, "OMPI_MCA_plm_rsh_args": RSH_ARGS}.items():
                    env.setdefault(key, value)
        group.start(launch)
        decision, cancelled = _wait(group, plan, cancel_event)
    finally:  # an interrupt (Ctrl-C, a task timeout) must not leave a replica behind
        group.stop_all()
        group.remove()
    while (event := group.next_event()) is not None:
        _relay(event, on_line)
    return _outcome(prepared, plan, group.ended, decision, cancelled)
