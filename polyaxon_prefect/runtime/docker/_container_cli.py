"""The container CLI of the ``docker`` backend: which one, images, and the containers to reap.

`find_cli` picks ``docker`` or ``podman`` once per process (``POLYAXON_PREFECT_CONTAINER_CLI``,
else Docker when its daemon answers, else Podman). Every container carries the labels of
`session_labels`, so whatever ends a run, its containers are found again: the session's reaper
removes those of its session (`polyaxon_prefect.runtime.session._reaper`), and `start_of_process`
removes those whose starting process is gone (a CLI and its reaper both killed).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from polyaxon_prefect.containers import (
    CLI_ENV,
    CLIS,
    LABEL_PID,
    LABEL_RUN,
    LABEL_SESSION,
    remove_argv,
)
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.runtime.session._session import current_session, pid_alive

__all__ = [
    "ContainerCli",
    "ContainerCliError",
    "find_cli",
    "image_problem",
    "key_folder",
    "reap_containers",
    "session_labels",
    "start_of_process",
    "with_sbin",
]

_CLI_TIMEOUT = 60.0


_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


class ContainerCliError(PolyaxonPrefectError):
    """No usable container CLI, or one that failed at something other than the op."""


@dataclass(frozen=True)
class ContainerCli:
    """The CLI that runs containers: its path, and which one it is (``docker``/``podman``)."""

    path: str
    kind: str

    def run(self, *args: str, timeout: float = _CLI_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """``CLI ARGS...`` (never a shell), its output captured."""
        return subprocess.run(
            [self.path, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            env=with_sbin(os.environ),
        )


def with_sbin(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the sbin folders on ``PATH``: podman's network plugins run iptables."""
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    return {**env, "PATH": os.pathsep.join([*path, *(p for p in _SBIN if p not in path)])}


def _kind_of(path: str) -> str:
    return "docker" if "docker" in Path(path).name else "podman"


def _answers(path: str) -> bool:
    """Whether ``path info`` succeeds (Docker's client exists without a daemon)."""
    try:
        done = subprocess.run(
            [path, "info"], capture_output=True, timeout=20, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def find_cli() -> ContainerCli:
    """The CLI named by ``POLYAXON_PREFECT_CONTAINER_CLI`` (``podman``, ``docker`` or a path);
    unset: ``docker`` when its daemon answers, else ``podman``.

    Raises:
        ContainerCliError: the named one, or both, are not installed or do not answer.
    """
    chosen = os.environ.get(CLI_ENV, "").strip()
    if chosen:
        path = shutil.which(chosen)
        if path is None:
            raise ContainerCliError(
                f"{CLI_ENV}={chosen!r}: no such program; install it, or name "
                f"{' or '.join(CLIS)} (or its path)"
            )
        return ContainerCli(path, _kind_of(path))
    docker = shutil.which("docker")
    if docker is not None and _answers(docker):
        return ContainerCli(docker, "docker")
    podman = shutil.which("podman")
    if podman is not None:
        return ContainerCli(podman, "podman")
    found = "docker is installed but its daemon does not answer" if docker else "neither is"
    raise ContainerCliError(
        f"the docker backend needs podman or docker ({found}); install one, or set {CLI_ENV}"
    )


def image_problem(cli: ContainerCli, image: str, pull: str) -> str | None:
    """None when ``image`` is here or could be pulled; else the one line that says why not."""
    here = cli.run("image", "inspect", "--format", "{{.Id}}", image).returncode == 0
    if here and pull != "always":
        return None
    if pull == "never":
        return f"image `{image}` is not on this machine and its imagePullPolicy is Never"
    pulled = cli.run("pull", "--quiet", image, timeout=600)
    if pulled.returncode == 0:
        return None
    if here:  # Always, but the registry is out of reach: the local copy runs
        return None
    last = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
    return f"image `{image}` is not on this machine and cannot be pulled: {last}"


def session_labels(run_uuid: str) -> dict[str, str]:
    session = current_session()
    return {LABEL_SESSION: session.id, LABEL_PID: str(os.getpid()), LABEL_RUN: run_uuid}


_KEYS_PREFIX = "plx-mpi-ssh-"


def key_folder() -> str:
    """A new private folder for an MPI run's key pair (a secret: outside the artifacts),
    named after this session and process so that the reaper removes it with the run's
    containers when the CLI was killed (`reap_containers`)."""
    return tempfile.mkdtemp(prefix=f"{_KEYS_PREFIX}{current_session().id}-{os.getpid()}-")


def _reap_key_folders(session: str | None) -> None:
    """Remove the key folders of ``session``, or (None) those whose process is gone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_KEYS_PREFIX}*"):
        owner, _, rest = folder.name[len(_KEYS_PREFIX) :].rpartition("-")
        owner_session, _, pid = owner.rpartition("-")
        if not rest or not pid:
            continue
        if (owner_session == session) if session else not _alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def reap_containers(cli: ContainerCli, *, session: str | None = None) -> int:
    """Remove the containers of ``session``, or (None) those whose starting process is gone
    (a CLI and its reaper both killed), then their networks and MPI key folders; returns how
    many containers."""
    label = f"{LABEL_SESSION}={session}" if session else LABEL_SESSION
    listed = cli.run("ps", "-aq", "--filter", f"label={label}")
    ids = listed.stdout.split()
    if session is None and ids:
        pid_format = '{{.Id}} {{index .Config.Labels "' + LABEL_PID + '"}}'
        inspected = cli.run("inspect", "--format", pid_format, *ids).stdout.splitlines()
        ids = [
            line.split()[0]
            for line in inspected
            if len(line.split()) == 2 and not _alive(line.split()[1])
        ]
    if ids:
        cli.run(*remove_argv(cli.kind, ids)[1:])
    _reap_networks(cli, label, every=session is not None)
    _reap_key_folders(session)
    return len(ids)


def _reap_networks(cli: ContainerCli, label: str, *, every: bool) -> None:
    """Remove the networks of distributed runs (`open_network`) labelled ``label``, after their
    containers: ``every`` one, or those whose starting process is gone."""
    listed = cli.run("network", "ls", "-q", "--filter", f"label={label}")
    names = listed.stdout.split() if listed.returncode == 0 else []
    if not every and names:
        pid_format = '{{.Name}} {{index .Labels "' + LABEL_PID + '"}}'
        inspected = cli.run("network", "inspect", "--format", pid_format, *names)
        names = [
            line.split()[0]
            for line in inspected.stdout.splitlines()
            if len(line.split()) == 2 and not _alive(line.split()[1])
        ]
    for name in names:
        cli.run("network", "rm", name)


def _alive(pid: str) -> bool:
    return pid.isdigit() and (int(pid) == os.getpid() or pid_alive(int(pid)))


_reaped: set[str] = set()


_reaped_lock = threading.Lock()


def start_of_process(cli: ContainerCli) -> None:
    """Once per process and CLI: the session's reaper learns the CLI; orphans are removed."""
    with _reaped_lock:
        if cli.path in _reaped:
            return
        _reaped.add(cli.path)
    current_session().track_containers(cli.path)
    reap_containers(cli)
