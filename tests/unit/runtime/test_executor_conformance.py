"""The executor conformance suite over every run kind registered on the local backend."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.runtime._executors import runnable_kinds
from polyaxon_prefect.testing import ExecutorTestCase

pytestmark = pytest.mark.process


def _container(argv: list[str]) -> dict[str, Any]:
    return {"command": argv}


def _replicas(kind: str, main: str) -> Any:
    """A distributed run of ``kind`` with its main replica only."""
    return lambda argv: {"kind": kind, main: {"replicas": 1, "container": _container(argv)}}


# A run section per registered kind, around the argv of its (main) process.
RUNS: dict[str, Any] = {
    "job": lambda argv: {"kind": "job", "container": _container(argv)},
    "notifier": lambda argv: {"kind": "notifier", "container": _container(argv)},
    "tfjob": _replicas("tfjob", "chief"),
    "pytorchjob": _replicas("pytorchjob", "master"),
    "mxjob": _replicas("mxjob", "scheduler"),
    "xgbjob": _replicas("xgbjob", "master"),
    "paddlejob": _replicas("paddlejob", "master"),
    "mpijob": _replicas("mpijob", "launcher"),
}


def test_every_registered_local_kind_has_a_run_section() -> None:
    assert set(runnable_kinds()) <= set(RUNS), set(runnable_kinds()) - set(RUNS)


@pytest.mark.parametrize("kind", runnable_kinds())
def test_conformance(kind: str, tmp_path: Path) -> None:
    if kind == "mpijob" and shutil.which("mpirun") is None:
        pytest.skip("an MPI job's launcher needs `mpirun` on this machine")
    ExecutorTestCase(kind, RUNS[kind], tmp_path).run_all()
