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


# A service is a long-running server, not a process that ends with outputs: its contract (serving,
# announced URL, stopped with its DAG or at its timeout) is tested in tests/prefect/test_service.py.
LONG_RUNNING = {"service"}
BATCH_KINDS = [kind for kind in runnable_kinds() if kind not in LONG_RUNNING]


def test_every_registered_local_kind_has_a_run_section() -> None:
    assert set(BATCH_KINDS) <= set(RUNS), set(BATCH_KINDS) - set(RUNS)
    assert set(runnable_kinds()) - set(BATCH_KINDS) == LONG_RUNNING


@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_conformance(kind: str, tmp_path: Path) -> None:
    if kind == "mpijob" and shutil.which("mpirun") is None:
        pytest.skip("an MPI job's launcher needs `mpirun` on this machine")
    ExecutorTestCase(kind, RUNS[kind], tmp_path).run_all()
