"""Run-kind facts derived from the run models (keys, replica groups, the leading replica)."""

from __future__ import annotations

import pytest

from polyaxon_prefect.specs import (
    DISTRIBUTED_KINDS,
    DISTRIBUTED_RUNTIMES,
    REPLICA_NAMES,
    RUN_MODELS,
    main_replica,
    replica_names,
    run_keys,
)


def test_every_run_kind_has_a_model_and_its_keys() -> None:
    assert set(RUN_MODELS) >= DISTRIBUTED_KINDS | {"job", "service", "dag"}
    assert run_keys("job") == {
        "kind",
        "environment",
        "connections",
        "volumes",
        "init",
        "sidecars",
        "container",
    }
    assert {"ports", "rewritePath", "isExternal", "replicas"} <= (run_keys("service") or set())
    assert run_keys("nope") is None


@pytest.mark.parametrize("model", DISTRIBUTED_RUNTIMES, ids=lambda m: m.__name__)
def test_the_main_replica_is_one_of_the_replica_groups(model: type) -> None:
    kind = model.model_fields["kind"].default
    assert main_replica(kind) == model.MAIN_REPLICA
    assert model.MAIN_REPLICA in replica_names(kind)
    assert set(replica_names(kind)) <= (run_keys(kind) or set())


def test_replica_names_and_main_replicas() -> None:
    assert replica_names("tfjob") == ("chief", "ps", "worker", "evaluator")
    assert replica_names("mxjob") == REPLICA_NAMES["mxjob"]
    assert replica_names("job") == ()
    assert [main_replica(k) for k in ("tfjob", "pytorchjob", "mpijob", "mxjob")] == [
        "chief",
        "master",
        "launcher",
        "scheduler",
    ]
    assert main_replica("raycluster") == "head"
    assert main_replica("job") is None
