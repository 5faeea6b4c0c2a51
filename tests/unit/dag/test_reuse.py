"""Which ops a restarted DAG reuses (``restart --from OP``), on real plans: the succeeded ops
that are not OP nor downstream of it (by ``dependencies`` or by a ``ref``), never a failed one."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.dag import (
    DagReuse,
    OpRecord,
    plan_dag,
    restart_point,
    reused_ops,
    uncached_ops,
)
from polyaxon_prefect.dag._reuse import downstream_of
from polyaxon_prefect.specs import Component, Status

JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}


def _plan(operations: list[dict[str, Any]]) -> Any:
    for op in operations:
        op["component"] = {
            "kind": "component",
            "inputs": [{"name": "x", "type": "str", "isOptional": True, "value": "-"}],
            "outputs": [{"name": "v", "type": "str"}],
            "run": JOB,
        }
    return plan_dag(
        Component.model_validate(
            {"kind": "component", "name": "p", "run": {"kind": "dag", "operations": operations}}
        )
    )


# a -> b -> c -> d, and e beside them (b feeds c through a ref, not `dependencies`)
PLAN = _plan(
    [
        {"name": "a"},
        {"name": "b", "dependencies": ["a"]},
        {"name": "c", "params": {"x": {"ref": "ops.b", "value": "outputs.v"}}},
        {"name": "d", "dependencies": ["c"]},
        {"name": "e"},
    ]
)


def _records(**statuses: str) -> dict[str, OpRecord]:
    return {
        name: OpRecord(name=name, status=Status(status), uuid=f"u-{name}", outputs={"v": name})
        for name, status in statuses.items()
    }


def test_downstream_follows_dependencies_and_refs() -> None:
    assert downstream_of("b", PLAN.downstreams) == {"b", "c", "d"}
    assert downstream_of("e", PLAN.downstreams) == {"e"}


def test_the_succeeded_ops_outside_the_rerun_are_reused() -> None:
    records = _records(a="succeeded", b="succeeded", c="failed", d="upstream_failed", e="failed")
    reused = reused_ops(DagReuse("c", records), PLAN.order, PLAN.downstreams)
    assert sorted(reused) == ["a", "b"]  # e failed: it runs again, though not downstream of c
    assert reused["b"].outputs == {"v": "b"}
    from_b = reused_ops(DagReuse("b", records), PLAN.order, PLAN.downstreams)
    assert sorted(from_b) == ["a"]


def test_an_op_unknown_to_the_plan_or_missing_from_the_records_is_not_reused() -> None:
    records = _records(a="succeeded", zz="succeeded")
    assert sorted(reused_ops(DagReuse("d", records), PLAN.order, PLAN.downstreams)) == ["a"]


def test_the_default_restart_point_is_the_first_failed_or_stopped_op_in_order() -> None:
    statuses = {"a": "succeeded", "b": "succeeded", "c": "failed", "d": "upstream_failed"}
    assert restart_point(PLAN.order, statuses) == "c"
    assert restart_point(PLAN.order, {"a": "succeeded", "b": "stopped"}) == "b"
    assert restart_point(PLAN.order, dict.fromkeys(PLAN.order, "succeeded")) is None


def test_a_forced_op_and_what_follows_it_are_not_reused() -> None:
    records = _records(a="succeeded", b="succeeded", c="succeeded", d="failed", e="succeeded")
    forced = DagReuse("d", records, frozenset({"b"}))
    assert sorted(reused_ops(forced, PLAN.order, PLAN.downstreams)) == ["a", "e"]
    # only the op run from, what follows it, and the forced ops skip the op cache: c (after b)
    # goes through it, its input being b's new output
    assert uncached_ops(forced, PLAN.downstreams) == {"b", "d"}


def test_without_an_op_to_run_from_nothing_is_reused_and_the_cache_decides() -> None:
    records = _records(a="succeeded", b="succeeded", c="succeeded", d="succeeded", e="succeeded")
    whole = DagReuse(None, records, frozenset({"e"}))
    assert reused_ops(whole, PLAN.order, PLAN.downstreams) == {}
    assert uncached_ops(whole, PLAN.downstreams) == {"e"}
