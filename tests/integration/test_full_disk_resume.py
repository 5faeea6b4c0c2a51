"""A sweep cut by a full disk, resumed once there is room: real CLI processes on a 2 MB tmpfs
(`test_full_disk.py`'s), a new Prefect home with a migrated database.

A file of its own (over a minute): the parallel suite runs it beside `test_full_disk.py`, on
another worker."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import new_home_env, no_process_left
from tests.integration.test_full_disk import BIN, SWEEP, _run, tmpfs

__all__ = ["tmpfs"]  # the fixture, shared with test_full_disk.py

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]


def test_a_sweep_cut_by_a_full_disk_resumes_once_there_is_room(
    tmpfs: Path, tmp_path: Path, migrated_home: Path
) -> None:
    """The failed appends leave whole lines only (no torn line, no lock), and ``--resume`` runs
    the sweep whole: its creation, cut before it was done, is made again."""
    _full_disk_then_resume(tmpfs, tmp_path, migrated_home)


def _fill(disk: Path, leave: int) -> Path:
    """A file that fills ``disk`` but for ``leave`` bytes."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        os.ftruncate(fd, os.fstat(fd).st_size - leave)
    finally:
        os.close(fd)
    return filler


def _full_disk_then_resume(disk: Path, tmp_path: Path, home: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        SWEEP.replace("numRuns: 300", "numRuns: 60").replace("concurrency: 2", "concurrency: 4")
    )
    env = new_home_env(home, disk, "0")
    filler = _fill(disk, 16384)  # room for a few queued trials only

    failed, _ = _run(env, spec)

    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "make room there, then run again with --resume" in failed.stdout
    (journal,) = (disk / ".sweeps").iterdir()  # no .lock, no .torn left
    assert journal.read_bytes().endswith(b"\n") and journal.stat().st_size > 0
    assert journal.stat().st_mode & 0o777 == 0o600
    filler.unlink()

    resumed = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "run", "--resume", "-f", str(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    output = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, output[-3000:]
    assert "status: succeeded" in resumed.stdout
    assert len(re.findall(r"trial \d+ +succeeded", resumed.stdout)) == 60
    recreated = re.findall(r"the sweep's study was not fully created .*", resumed.stderr)
    assert len(recreated) == 1 and "Traceback" not in output
    assert "cut short" not in output  # nothing torn to repair
    assert sorted(p.name for p in (disk / ".sweeps").iterdir()) == [journal.name]
    no_process_left(home)
