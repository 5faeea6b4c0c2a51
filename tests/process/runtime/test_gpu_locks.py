"""GPU slots held by file locks: released by the kernel when the holder dies (``kill -9``),
never given twice, taken all at once or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from polyaxon_prefect.runtime._errors import RunRuntimeError
from polyaxon_prefect.runtime.gpu._gpu_locks import acquire_gpus, lock_dir_problem

pytestmark = pytest.mark.process

HOLD = """
import sys, time
from polyaxon_prefect.runtime._errors import RunRuntimeError
from polyaxon_prefect.runtime.gpu._gpu_locks import acquire_gpus, lock_dir_problem
lease = acquire_gpus([2], "holder (deadbeef)", gpus=["0", "1"])
print("held", lease.devices, flush=True)
time.sleep(60)
"""


def test_a_killed_holder_gives_its_gpus_back_and_a_waiter_says_who_held_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("POLYAXON_PREFECT_GPU_LOCKS", str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().startswith("held [['0', '1']]")
        reasons: list[str] = []
        killer = threading.Timer(0.5, lambda: os.kill(holder.pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        lease = acquire_gpus([1], "waiter (0000)", on_wait=reasons.append, gpus=["0", "1"])
        assert lease is not None and lease.devices == [["0"]]
        assert time.monotonic() - started >= 0.4
        assert reasons == ["waiting for 1 GPU: 2 held by run holder (deadbeef)"]
        lease.release()
    finally:
        holder.kill()
        holder.wait()


def test_concurrent_ops_in_one_process_never_hold_one_gpu_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("POLYAXON_PREFECT_GPU_LOCKS", str(tmp_path))
    held: dict[str, int] = {}
    worst: list[int] = []
    lock = threading.Lock()

    def op(requests: list[int]) -> None:
        lease = acquire_gpus(requests, "op", gpus=["0", "1"])
        assert lease is not None
        with lock:
            for ids in lease.devices:
                for gpu in ids:
                    held[gpu] = held.get(gpu, 0) + 1
            worst.append(max(held.values()))
        time.sleep(0.05)
        with lock:
            for ids in lease.devices:
                for gpu in ids:
                    held[gpu] -= 1
        lease.release()

    threads = [threading.Thread(target=op, args=([1, 1] if n % 3 == 0 else [1],)) for n in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(worst) == 9 and max(worst) == 1


def test_a_cancelled_wait_takes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("POLYAXON_PREFECT_GPU_LOCKS", str(tmp_path))
    first = acquire_gpus([1], "first", gpus=["0"])
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    assert acquire_gpus([1], "second", cancel_event=cancel, gpus=["0"]) is None
    assert first is not None
    first.release()
    again = acquire_gpus([1], "third", gpus=["0"])
    assert again is not None and again.devices == [["0"]]
    again.release()


@pytest.fixture
def machine_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The machine-wide default folder, moved under this test's own temp folder."""
    from polyaxon_prefect.runtime.gpu import _gpu_locks

    monkeypatch.delenv("POLYAXON_PREFECT_GPU_LOCKS", raising=False)
    monkeypatch.setattr(_gpu_locks, "_MACHINE_TEMP", tmp_path)
    return tmp_path / f"polyaxon-prefect-gpus-{os.getuid()}"


def test_the_default_lock_folder_is_per_user_made_0700_and_shared_by_prefect_homes(
    machine_temp: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home-a"))
    first = acquire_gpus([1], "first", gpus=["0"])
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home-b"))
    reasons: list[str] = []
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    second = acquire_gpus([1], "second", on_wait=reasons.append, cancel_event=cancel, gpus=["0"])

    assert first is not None and second is None
    assert reasons == ["waiting for 1 GPU: 1 held by run first"]
    assert machine_temp.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in machine_temp.iterdir()) == ["gpu-0.0.lock", "pool.lock"]
    assert not (tmp_path / "home-a").exists() and not (tmp_path / "home-b").exists()
    first.release()


@pytest.mark.parametrize("damage", ["writable-by-others", "another-owner", "a-link"])
def test_an_unsafe_default_lock_folder_is_refused_in_one_line(
    machine_temp: Path, tmp_path: Path, damage: str
):
    if damage == "a-link":
        (tmp_path / "elsewhere").mkdir()
        machine_temp.symlink_to(tmp_path / "elsewhere")
        why = "is not a folder (a file or a link is there)"
    else:
        machine_temp.mkdir(mode=0o700)
        if damage == "writable-by-others":
            machine_temp.chmod(0o777)
            why = "is writable by others (mode 0777): chmod 700 it"
        else:
            if os.geteuid() != 0:
                pytest.skip("giving a folder to another user needs root")
            os.chown(machine_temp, 4242, -1)
            why = "belongs to another user (uid 4242)"

    with pytest.raises(RunRuntimeError) as raised:
        acquire_gpus([1], "op", gpus=["0"])

    assert str(raised.value) == (
        f"cannot take GPUs: the lock folder {machine_temp} (POLYAXON_PREFECT_GPU_LOCKS): "
        f"the GPU lock folder {machine_temp} {why}"
    )
    assert not (tmp_path / "elsewhere" / "pool.lock").exists()
    assert lock_dir_problem(machine_temp) == f"the GPU lock folder {machine_temp} {why}"
