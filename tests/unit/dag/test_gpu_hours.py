"""A DAG's GPU-hours (pure): the sum of its ops' own, none when no op held a GPU."""

from __future__ import annotations

import pytest

from polyaxon_prefect.dag._report import dag_gpu_hours


def test_a_dags_gpu_hours_add_up_its_ops_and_skip_those_without() -> None:
    ops = {
        "a": {"status": "succeeded", "gpu_hours": 0.25},
        "sweep": {"status": "succeeded", "gpu_hours": 1.5, "trials": []},
        "cpu": {"status": "succeeded"},
        "skipped": {"status": "skipped", "gpu_hours": None},
    }
    assert dag_gpu_hours(ops) == pytest.approx(1.75)
    assert dag_gpu_hours({"cpu": {"status": "succeeded"}}) is None
    assert dag_gpu_hours({}) is None
