"""A DAG's GPU-hours are its ops' sum, in its result, ``get`` and ``ls -io``: a small DAG really
run on a simulated 2-GPU machine (``CUDA_VISIBLE_DEVICES=0,1``), its ops asking for 1, 2 and
no GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run
from tests.prefect.conftest import cli_in
from tests.prefect.test_gpus import _component, two_gpus

__all__ = ["two_gpus"]  # the fixture, used by name


def test_a_dags_gpu_hours_are_the_sum_of_its_ops(
    tmp_path: Path, two_gpus: dict[str, str], prefect_server: str
) -> None:
    _component(tmp_path, 1, 0.3, name="one-gpu")
    _component(tmp_path, 2, 0.3, name="two-gpus")
    _component(tmp_path, 0, 0.1, name="no-gpu")
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        "version: 1.1\nkind: component\nname: gpu-hours-dag\nrun:\n  kind: dag\n"
        "  operations:\n"
        "  - {name: a, pathRef: one-gpu.yaml}\n"
        "  - {name: b, pathRef: two-gpus.yaml}\n"
        "  - {name: c, pathRef: no-gpu.yaml, dependencies: [a]}\n",
        encoding="utf-8",
    )

    result = run(dag)

    assert result.status == "succeeded", result.message
    assert result.ops is not None
    a, b = result.ops["a"]["gpu_hours"], result.ops["b"]["gpu_hours"]
    assert 0.3 / 3600 <= a < 30 / 3600
    assert 2 * 0.3 / 3600 <= b < 60 / 3600
    assert "gpu_hours" not in result.ops["c"], "an op without GPUs holds none"
    assert result.gpu_hours == pytest.approx(a + b)
    shown = json.loads(cli_in(prefect_server, "get", result.flow_run_id or "", "--json").stdout)
    assert shown["gpu_hours"] == pytest.approx(a + b, abs=1e-6)  # `get` keeps 6 decimals
    assert shown["ops"]["b"]["gpu_hours"] == pytest.approx(b, abs=1e-6)
    listed = cli_in(prefect_server, "ls", "-io", "-q", "name:gpu-hours-dag")
    header, row = listed.stdout.splitlines()[:2]
    assert "gpu_hours" in header.split(), listed.stdout
    assert f" {json.dumps(shown['gpu_hours'])} " in f" {row} ", listed.stdout  # as `get`
