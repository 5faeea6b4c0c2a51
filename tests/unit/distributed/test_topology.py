"""Replica plans from v1.1 files and from the legacy distributed examples (seeds 001, 003, 004)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.distributed import plan_replicas
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.specs import PytorchJob, TFJob

from .conftest import load_run

LEGACY_TF = """
    version: 1
    kind: experiment
    framework: tensorflow
    environment:
      resources:
        gpu: {requests: 1, limits: 1}
      replicas:
        n_workers: 7
        n_ps: 3
        default_worker:
          resources:
            cpu: {requests: 1, limits: 2}
            gpu: {requests: 1, limits: 1}
        worker:
          - index: 2
            resources:
              cpu: {requests: 1, limits: 2}
              memory: {requests: 256, limits: 1024}
        default_ps:
          resources:
            memory: {requests: 256, limits: 256}
        ps:
          - index: 0
            resources:
              memory: {requests: 512, limits: 512}
    run:
      cmd: python train.py
"""


def _limits(replica) -> dict:
    resources = replica.spec.container.resources
    return dict(resources.limits or {}) if resources is not None else {}


def test_the_legacy_tensorflow_example_has_a_chief_7_workers_and_3_ps(tmp_path: Path) -> None:
    plan = plan_replicas(load_run(tmp_path, LEGACY_TF))
    assert plan.kind == "tfjob"
    assert [(g.type, g.count) for g in plan.groups] == [("chief", 1), ("ps", 3), ("worker", 7)]
    assert plan.size == 11
    assert plan.main.name == "chief-0" and plan.main.rank == 0
    assert [r.rank for r in plan.replicas] == list(range(11))
    workers = plan.of_type("worker")
    # worker 2's override replaces the default worker resources (no GPU any more)
    assert "nvidia.com/gpu" not in _limits(workers[2])
    assert _limits(workers[2])["memory"]
    assert all(_limits(w)["nvidia.com/gpu"] == 1 for i, w in enumerate(workers) if i != 2)
    ps = plan.of_type("ps")
    assert _limits(ps[0])["memory"] != _limits(ps[1])["memory"]


def test_the_legacy_pytorch_example_has_a_master_and_workers(tmp_path: Path) -> None:
    run = load_run(
        tmp_path,
        """
        version: 1
        kind: experiment
        framework: pytorch
        environment:
          replicas: {n_workers: 3}
        run: {cmd: python train.py}
        """,
    )
    plan = plan_replicas(run)
    assert [r.name for r in plan.replicas] == ["master-0", "worker-0", "worker-1", "worker-2"]
    assert [r.rank for r in plan.replicas] == [0, 1, 2, 3]


def test_the_legacy_mxnet_example_has_a_scheduler_servers_and_workers(tmp_path: Path) -> None:
    run = load_run(
        tmp_path,
        """
        version: 1
        kind: experiment
        framework: mxnet
        environment:
          replicas: {n_workers: 3, n_ps: 1}
        run: {cmd: python train.py}
        """,
    )
    plan = plan_replicas(run)
    assert [(g.type, g.count) for g in plan.groups] == [
        ("scheduler", 1),
        ("server", 1),
        ("worker", 3),
    ]
    assert plan.main.name == "scheduler-0"


def test_a_v11_tfjob_without_chief_is_led_by_worker_0(tmp_path: Path) -> None:
    run = load_run(
        tmp_path,
        """
        version: 1.1
        kind: component
        run:
          kind: tfjob
          ps: {replicas: 2, container: {image: a, command: [x]}}
          worker: {replicas: 3, container: {image: a, command: [x]}}
        """,
    )
    plan = plan_replicas(run)
    assert plan.main.name == "worker-0"
    # the main replica comes first, then the groups in the kind's order
    assert [r.name for r in plan.replicas] == [
        "worker-0",
        "worker-1",
        "worker-2",
        "ps-0",
        "ps-1",
    ]
    assert [g.type for g in plan.groups] == ["ps", "worker"]


def test_an_unset_replica_count_is_one() -> None:
    run = PytorchJob.model_validate({"master": {"container": {"command": ["x"]}}})
    plan = plan_replicas(run)
    assert [r.name for r in plan.replicas] == ["master-0"]


def test_index_overrides_merge_environment_fields_over_the_group() -> None:
    run = TFJob.model_validate(
        {
            "worker": {
                "replicas": 2,
                "environment": {"nodeSelector": {"a": "1"}, "labels": {"l": "x"}},
                "container": {"command": ["x"]},
                "indexOverrides": {1: {"environment": {"nodeSelector": {"b": "2"}}}},
            }
        }
    )
    first, second = plan_replicas(run).of_type("worker")
    assert first.spec.environment.node_selector == {"a": "1"}
    assert second.spec.environment.node_selector == {"b": "2"}
    assert second.spec.environment.labels == {"l": "x"}


def test_a_templated_replica_count_cannot_be_planned() -> None:
    run = TFJob.model_validate({"worker": {"replicas": "{{ n }}", "container": {"command": ["x"]}}})
    with pytest.raises(PolyaxonfileError) as info:
        plan_replicas(run)
    assert info.value.problems[0].rule == "replicas_not_rendered"
