"""The first runs on a new Prefect home: several CLI processes at once on busy cores, one
building the database while the others wait for it. Real CLI processes, found by an
environment variable the test gives them (`test_lifecycle.py`'s way), never by name.

A file of its own (over a minute): the parallel suite runs it beside `test_lifecycle.py`, on
another worker."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.prefect.conftest import run_processes, wait_until
from tests.prefect.test_lifecycle import PY, _no_leftovers, base_env, job_file, start_cli

__all__ = ["_no_leftovers"]  # no process of a test outlives it, as in test_lifecycle.py

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """One busy-loop process per core, for the duration of the test."""
    loops = [subprocess.Popen([PY, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_four_first_runs_at_once_on_a_new_prefect_home_with_busy_cores(
    tmp_path: Path, busy_cores: None
):
    """The first run on a new home, on a machine whose cores are busy, with three more started
    at the same time: the one that builds the database says so (the others wait for it, then
    start together), each succeeds, and none leaves a process behind."""
    path = job_file(tmp_path, "first-runs", "print('hello from the first run')")
    env = base_env(tmp_path, None)
    marks = [uuid.uuid4().hex for _ in "abcd"]
    clis = [start_cli(["-f", str(path), "--json"], env=env, mark=mark) for mark in marks]

    results = [cli.communicate(timeout=500) for cli in clis]

    for cli, (out, err) in zip(clis, results, strict=True):
        assert cli.returncode == 0, err
        assert json.loads(out)["status"] == "succeeded"
    assert sum("first run only" in err for _out, err in results) == 1, results
    for mark in marks:
        assert wait_until(lambda mark=mark: not run_processes(mark), 10)
