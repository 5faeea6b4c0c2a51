"""Holding GPUs for an op's whole life, across every op and every CLI on this machine.

Why file locks and not Prefect global concurrency limits: a GPU must come back when its holder
dies, however it dies. ``fcntl.flock`` on one file per GPU slot (`Slot`) is released by the
kernel when the holding process ends (``kill -9`` included), costs no server round trip (taking
and giving back 1 free GPU of 2 took 0.13 ms, 4 of 8 0.35 ms, on a 2-core machine; a
concurrency-limit slot is API calls each way, and a slot of a killed CLI is freed only when its
lease expires), works before any server is up and names its holder (the file holds the run's
name). The decisions are pure
(`polyaxon_prefect.distributed._gpu_pool`); this module only opens, locks and reads files.

The files live in ``/tmp/polyaxon-prefect-gpus-<uid>`` (`lock_dir`): every CLI, worker and
deployment of one user on one machine sees the same pool, whatever its Prefect home (a folder per
Prefect home let two homes hold one GPU at once), and ``/tmp`` rather than ``$TMPDIR``, which a
scheduler may set per job. The folder is made 0700 and refused when another user owns it or
others may write in it (they could plant or remove lock files); another folder can be named
with ``POLYAXON_PREFECT_GPU_LOCKS``. Taking GPUs goes through one short-held pool lock,
so an op takes every slot it needs or none, and two gangs never each hold half of what the
other waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from polyaxon_prefect.distributed import (
    SHARING_ENV,
    Slot,
    choose,
    machine_gpus,
    sharing,
    slots,
    wait_reason,
)
from polyaxon_prefect.runtime._errors import RunRuntimeError

__all__ = [
    "LOCKS_ENV",
    "GpuLease",
    "acquire_gpus",
    "lock_dir",
    "lock_dir_problem",
    "this_machine_gpus",
]

LOCKS_ENV = "POLYAXON_PREFECT_GPU_LOCKS"
_POLL_SECONDS = 0.2


_MACHINE_TEMP = Path("/tmp")  # machine-wide on purpose (not $TMPDIR), see the module


def lock_dir() -> Path:
    """The folder of the GPU lock files (see the module)."""
    explicit = os.environ.get(LOCKS_ENV)
    if explicit:
        return Path(explicit)
    return _MACHINE_TEMP / f"polyaxon-prefect-gpus-{os.getuid()}"


def lock_dir_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the GPU lock files (None when it can, or is not made yet):
    not a folder; and for the machine-wide default, a folder another user owns or others may
    write in (a link there is refused too: its target is not ours to trust)."""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"the GPU lock folder {folder} cannot be read: {exc.strerror or exc}"
    if os.environ.get(LOCKS_ENV):
        if folder.is_dir():
            return None
        return f"{LOCKS_ENV}={str(folder)!r} is not a folder: the GPU lock files go in one"
    if not stat.S_ISDIR(info.st_mode):
        return f"the GPU lock folder {folder} is not a folder (a file or a link is there)"
    if info.st_uid != os.getuid():
        return f"the GPU lock folder {folder} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return (
            f"the GPU lock folder {folder} is writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}): chmod 700 it"
        )
    return None


def _ensure_lock_dir() -> Path:
    """The lock folder, made (0700) if missing; ``OSError`` when it cannot hold the locks."""
    folder = lock_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = lock_dir_problem(folder)
    if problem is not None:
        raise OSError(problem)
    return folder


@functools.lru_cache(maxsize=8)
def _listing(smi: str) -> str:
    try:
        return subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def this_machine_gpus() -> list[str]:
    """This machine's GPUs (`machine_gpus`): ``CUDA_VISIBLE_DEVICES``, else ``nvidia-smi -L``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return machine_gpus(visible, None)
    smi = shutil.which("nvidia-smi")
    return machine_gpus(None, _listing(smi) if smi else "")


def per_gpu() -> int:
    """Ops per GPU (``POLYAXON_PREFECT_GPU_SHARING``); a bad value is read as 1 here (the
    preparation step refuses it with a located message first)."""
    try:
        return sharing(os.environ.get(SHARING_ENV))
    except ValueError:
        return 1


@dataclass
class GpuLease:
    """GPUs held by this process for one op: the devices of each of its processes (in the order
    of the requests); `release` gives them back (the kernel does it if this process dies)."""

    devices: list[list[str]]
    files: list[IO[str]] = field(default_factory=list)

    def release(self) -> None:
        for handle in self.files:
            with contextlib.suppress(OSError):
                handle.truncate(0)
                fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        self.files = []


def _try_lock(path: Path) -> IO[str] | None:
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


@contextlib.contextmanager
def _pool_lock(folder: Path) -> Iterator[None]:
    with (folder / "pool.lock").open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _take(folder: Path, pool: list[Slot], requests: Sequence[int], holder: str) -> GpuLease | str:
    """One try, under the pool lock: the lease, or the wait reason."""
    with _pool_lock(folder):
        handles: dict[Slot, IO[str]] = {}
        busy: dict[Slot, str] = {}
        for slot in pool:
            handle = _try_lock(folder / f"{slot.key}.lock")
            if handle is None:
                busy[slot] = _holder(folder / f"{slot.key}.lock")
            else:
                handles[slot] = handle
        chosen = choose(list(handles), requests)
        keep = {slot for group in chosen or [] for slot in group}
        for slot, handle in handles.items():
            if slot not in keep:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
        if chosen is None:
            return wait_reason(requests, busy)
        files = []
        for slot in sorted(keep):
            handle = handles[slot]
            handle.truncate(0)
            handle.write(holder)
            handle.flush()
            files.append(handle)
        return GpuLease([[slot.gpu for slot in group] for group in chosen], files)


def acquire_gpus(
    requests: Sequence[int],
    holder: str,
    *,
    on_wait: Callable[[str], None] | None = None,
    cancel_event: threading.Event | None = None,
    gpus: Sequence[str] | None = None,
) -> GpuLease | None:
    """Take the GPUs of one op (one count per process) for as long as the lease is held,
    waiting while they are busy: ``on_wait(reason)`` each time the reason changes. None when
    ``cancel_event`` was set while waiting. Asks for no GPU take nothing and never wait.

    The caller has refused requests larger than the machine (`capacity_problem`) already; such
    a request would wait for ever.
    """
    if not any(requests):
        return GpuLease([[] for _ in requests])
    folder = lock_dir()
    pool = slots(this_machine_gpus() if gpus is None else list(gpus), per_gpu())
    said = ""
    while True:
        try:
            folder = _ensure_lock_dir()
            got = _take(folder, pool, requests, holder)
        except OSError as exc:  # a file where the folder should be, no room, no rights
            raise RunRuntimeError(
                f"cannot take GPUs: the lock folder {folder} ({LOCKS_ENV}): {exc.strerror or exc}"
            ) from None
        if isinstance(got, GpuLease):
            return got
        if got != said and on_wait is not None:
            on_wait(got)
        said = got
        if cancel_event is not None:
            if cancel_event.wait(_POLL_SECONDS):
                return None
        else:
            threading.Event().wait(_POLL_SECONDS)
