"""`DagRun`: the DAG's decisions at unit speed, without Prefect (no flow run, no process).

Each test drives the run as the Prefect layer does: take `next_actions`, "finish" the launched
ops with a record, repeat; and checks what was launched, marked, and how the DAG ends.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.dag import plan_dag
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.dag._scheduler import DagRun, Launch, Mark
from polyaxon_prefect.specs import Component, Operation

JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}
LOSS = [{"name": "loss", "type": "float"}]


def _op(name: str, **fields: Any) -> dict[str, Any]:
    component: dict[str, Any] = {"kind": "component", "run": JOB}
    if "outputs" in fields:
        component["outputs"] = fields.pop("outputs")
    if "inputs" in fields:
        component["inputs"] = fields.pop("inputs")
    return {"name": name, "component": component, **fields}


def _run(operations: list[dict[str, Any]], **dag: Any) -> DagRun:
    component = Component.model_validate(
        {
            "kind": "component",
            "name": "pipe",
            "run": {"kind": "dag", "operations": operations, **dag},
        }
    )
    operation = Operation.model_validate({"kind": "operation", "component": component})
    return DagRun(plan_dag(operation), {}, {"uuid": "dag-uuid"})


def _finish(run: DagRun, name: str, status: str, **outputs: Any) -> None:
    run.finished(name, OpRecord(name=name, status=status, outputs=outputs))


def test_a_chain_launches_one_op_at_a_time_in_order() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"]), _op("c", dependencies=["b"])])

    assert run.next_actions() == [Launch("a", {})]
    assert run.next_actions() == []  # b waits for a
    _finish(run, "a", "succeeded")
    assert run.next_actions() == [Launch("b", {})]
    _finish(run, "b", "succeeded")
    assert run.next_actions() == [Launch("c", {})]
    _finish(run, "c", "succeeded")
    assert run.next_actions() == [] and run.final_status() == "succeeded"


def test_a_failure_marks_the_whole_downstream_chain_in_one_pass() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"]), _op("c", dependencies=["b"])])
    run.next_actions()
    _finish(run, "a", "failed")

    actions = run.next_actions()

    assert [(a.name, a.status) for a in actions if isinstance(a, Mark)] == [
        ("b", "upstream_failed"),
        ("c", "upstream_failed"),
    ]
    assert "trigger `all_succeeded` cannot be met (a: failed)" in actions[0].message
    assert run.final_status() == "failed"


def test_trigger_all_done_runs_a_clean_up_after_a_failure() -> None:
    run = _run([_op("a"), _op("cleanup", dependencies=["a"], trigger="all_done")])
    run.next_actions()
    _finish(run, "a", "failed")
    assert run.next_actions() == [Launch("cleanup", {})]


def test_concurrency_caps_the_ops_in_flight() -> None:
    run = _run([_op(name) for name in "abcd"], concurrency=2)

    assert [a.name for a in run.next_actions()] == ["a", "b"]
    assert run.next_actions() == []
    _finish(run, "a", "succeeded")
    assert [a.name for a in run.next_actions()] == ["c"]


def test_refs_resolve_from_the_upstream_record_and_false_conditions_skip() -> None:
    run = _run(
        [
            _op("train", outputs=LOSS),
            _op(
                "report",
                inputs=[{"name": "loss", "type": "float"}],
                params={"loss": {"ref": "ops.train", "value": "outputs.loss"}},
            ),
            _op(
                "deploy",
                dependencies=["train"],
                conditions="{{ ops.train.outputs.loss < 0.1 }}",
            ),
        ]
    )
    run.next_actions()
    _finish(run, "train", "succeeded", loss=0.5)

    actions = run.next_actions()

    assert Launch("report", {"loss": 0.5}) in actions
    [mark] = [a for a in actions if isinstance(a, Mark)]
    assert (mark.name, mark.status) == ("deploy", "skipped")


def test_a_stop_marks_what_has_not_started_and_decides_the_status() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"])])
    run.next_actions()

    assert run.stop("stopped", "interrupted")
    assert not run.stop("failed", "a second decision is ignored")
    _finish(run, "a", "stopped")
    [mark] = run.next_actions()

    assert (mark.name, mark.status) == ("b", "stopped")
    assert mark.message == "stopped before it started: interrupted"
    assert run.final_status() == "stopped" and run.stop_reason == "interrupted"


def test_an_op_waits_until_it_starts_or_is_decided() -> None:
    """What a DAG whose server went away asks before it stops: is any op still to start?"""
    run = _run([_op("a"), _op("b", dependencies=["a"])])
    assert run.waiting()
    run.next_actions()
    assert run.waiting()  # b waits on a
    _finish(run, "a", "succeeded")
    run.next_actions()
    assert not run.waiting()  # b runs
    _finish(run, "b", "succeeded")
    assert not run.waiting()


def test_stopping_one_pending_op_keeps_the_others_going() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"]), _op("c")], concurrency=1)
    assert [a.name for a in run.next_actions()] == ["a"]

    assert run.stop_op("c") and not run.stop_op("missing")
    actions = run.next_actions()

    assert [(a.name, a.status) for a in actions if isinstance(a, Mark)] == [("c", "stopped")]
    _finish(run, "a", "succeeded")
    assert run.next_actions() == [Launch("b", {})]
    _finish(run, "b", "succeeded")
    assert run.final_status() == "succeeded"  # one stopped op among successes


def test_early_stopping_on_a_metric_stops_the_rest() -> None:
    policy = {
        "kind": "metric_early_stopping",
        "metric": "loss",
        "value": 0.1,
        "optimization": "minimize",
    }
    run = _run([_op("a", outputs=LOSS), _op("b"), _op("c")], concurrency=1, earlyStopping=[policy])
    run.next_actions()
    _finish(run, "a", "succeeded", loss=0.05)

    decision = run.check_early_stopping()

    assert decision is not None and decision.status == "succeeded"
    assert {(a.name, a.status) for a in run.next_actions()} == {
        ("b", "stopped"),
        ("c", "stopped"),
    }
    assert run.final_status() == "succeeded"


def test_with_nothing_in_flight_an_undecided_op_fails_rather_than_hangs() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"])])
    run.next_actions()
    _finish(run, "a", "succeeded")
    run.ops["b"].status = None  # as if a decision was lost

    [mark] = run.undecided()

    assert (mark.name, mark.status) == ("b", "failed")


def test_a_serving_service_lets_its_dependents_start_and_stopped_it_keeps_the_dag_green() -> None:
    """A service op counts as succeeded for its dependents' triggers once it serves; stopped at
    the DAG's end, it does not fail the DAG (`stopped` among successes)."""
    run = _run([_op("board"), _op("look", dependencies=["board"])])
    assert run.next_actions() == [Launch("board", {})]
    assert run.next_actions() == []  # not serving yet: `look` waits
    run.serving("board")
    assert run.next_actions() == [Launch("look", {})]
    _finish(run, "look", "succeeded")
    _finish(run, "board", "stopped")
    assert run.final_status() == "succeeded"


def test_serving_is_ignored_for_an_op_that_is_not_running() -> None:
    run = _run([_op("a"), _op("b", dependencies=["a"])])
    run.serving("a")  # never launched
    assert run.next_actions() == [Launch("a", {})]
    assert run.next_actions() == []
