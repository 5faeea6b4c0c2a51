"""An MPI job on one machine: the launcher's ``mpirun`` over a hostfile of local slots.

On a cluster the MPI operator starts worker pods that only wait for the launcher's ``mpirun``
to reach them; on one machine ``mpirun`` starts every rank itself, so only the launcher runs as
a process, with the hostfile (`polyaxon_prefect.distributed.mpi_hostfile`) that gives it the
workers' slots. Without ``mpirun`` the job cannot start at all: that is said before anything
runs, with the package to install.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from polyaxon_prefect.exceptions import Problem, UnsupportedFeatureError
from polyaxon_prefect.specs import LAUNCHED_KINDS

__all__ = ["AS_ROOT", "LAUNCHED", "MPIRUN", "check_mpirun", "launcher_env", "mpirun_argv"]

MPIRUN = ("mpirun", "mpiexec")
LAUNCHED: dict[str, tuple[str, ...]] = LAUNCHED_KINDS
"""Kinds whose other replicas are started by the main one (not as processes of their own),
and the replicas that run as processes (read from the run models' ``LAUNCHERS``)."""
_HOSTFILE_FLAGS = ("--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f")


def check_mpirun(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Refuse an MPI job on a machine without ``mpirun`` (rule ``mpirun_missing``)."""
    command = Path(argv[0]).name if argv else ""
    name = argv[0] if command in MPIRUN else MPIRUN[0]
    if shutil.which(name, path=env.get("PATH")) is not None:
        return
    raise UnsupportedFeatureError(
        [
            Problem(
                f"an mpijob runs its launcher with `{name}`, which is not installed here",
                rule="mpirun_missing",
                path=("component", "run", "launcher", "container", "command"),
                hint="install Open MPI (Debian/Ubuntu: `apt-get install openmpi-bin`)",
            )
        ]
    )


def mpirun_argv(argv: Sequence[str], hostfile: Path, slots: int) -> list[str]:
    """The launcher's command with the hostfile: an ``mpirun`` command gets ``--hostfile``
    (unless it names one), any other command is started by ``mpirun`` on every slot."""
    if argv and Path(argv[0]).name in MPIRUN:
        if any(part in _HOSTFILE_FLAGS for part in argv):
            return list(argv)
        return [argv[0], "--hostfile", str(hostfile), *argv[1:]]
    return [MPIRUN[0], "--hostfile", str(hostfile), "-np", str(slots), *argv]


AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def launcher_env(env: Mapping[str, str]) -> dict[str, str]:
    """The launcher's environment: as root (a container's usual user), Open MPI refuses to
    start unless told twice that it may, as the MPI operator's images tell it; the user's own
    values win."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return {**AS_ROOT, **env}
    return dict(env)
