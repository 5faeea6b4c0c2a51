"""Grids sized and enumerated lazily: a 10^7-point grid costs what a 10-point one does.

Counting multiplies the params' counts (``range``/``linspace``/``logspace`` count from their
numbers), point ``i`` is computed from ``i``, a grid past ``POLYAXON_PREFECT_MAX_GRID`` is
refused with one located line, and ``check``/``compile`` of a 10^7 grid run in a process whose
address space is capped at 3 GB.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.specs.matrix._matrix import MAX_GRID_ENV
from tests.unit.search.test_huge_grids import _grid_file

pytestmark = pytest.mark.process


# -- check and compile in a capped address space --------------------------------------------

_CAP = 3 * 1024**3


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_CAP, _CAP))


@pytest.mark.parametrize("command", ["check", "compile"])
def test_check_and_compile_of_a_ten_million_grid_fit_in_3_gb(tmp_path: Path, command: str) -> None:
    params = (
        '    x: {kind: range, value: "0:100000:1"}\n'
        "    y: {kind: linspace, value: {start: 0, stop: 1, num: 100}}\n"
    )
    path = _grid_file(tmp_path, params)
    env = {**os.environ, MAX_GRID_ENV: str(10**7), "OPENBLAS_NUM_THREADS": "1"}

    done = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", command, "-f", str(path)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_capped,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    if command == "check":
        assert "a grid sweep of 10000000 trials of job `big`" in done.stdout
    else:
        assert "total: 10000000" in done.stdout and "10000000 points" in done.stdout
        assert done.stdout.count("- x: ") == 10
