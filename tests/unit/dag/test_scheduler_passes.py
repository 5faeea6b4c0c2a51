"""`DagRun.next_actions` looks only at what changed: the same decisions as a pass over every
op (the way it decided before), at a cost that does not grow with the op count."""

from __future__ import annotations

import random
from typing import Any

from polyaxon_prefect.dag import plan_dag
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.dag._scheduler import DagRun, Launch, Mark
from polyaxon_prefect.specs import Component, Operation, Status

JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}
TRIGGERS = [
    None,
    "all_succeeded",
    "all_failed",
    "all_done",
    "one_succeeded",
    "one_failed",
    "one_done",
]


class _FullScan(DagRun):
    """The reference: every pass decides every undecided op in topological order."""

    def next_actions(self) -> list[Launch | Mark]:
        actions: list[Launch | Mark] = []
        for name in self.plan.order:
            state = self.ops[name]
            if state.status is not None or state.running:
                continue
            action = self._decide(name)
            if isinstance(action, Launch):
                state.running = True
                self._in_flight += 1
            if isinstance(action, Launch | Mark):
                actions.append(action)
        return actions


def _operation(seed: int) -> tuple[Operation, int]:
    rng = random.Random(seed)
    operations: list[dict[str, Any]] = []
    for i in range(rng.randint(3, 25)):
        op: dict[str, Any] = {"name": f"op{i}", "component": {"kind": "component", "run": JOB}}
        ups = rng.sample(range(i), k=min(i, rng.randint(0, 3)))
        if ups:
            op["dependencies"] = [f"op{u}" for u in ups]
            if trigger := rng.choice(TRIGGERS):
                op["trigger"] = trigger
        operations.append(op)
    dag: dict[str, Any] = {"kind": "dag", "operations": operations}
    if rng.random() < 0.7:
        dag["concurrency"] = rng.randint(1, 4)
    component = Component.model_validate({"kind": "component", "name": "pipe", "run": dag})
    return Operation.model_validate({"kind": "operation", "component": component}), seed


def _drive(run: DagRun, seed: int) -> list[Any]:
    """Launch, end launched ops in a seeded order with seeded statuses, stop op or DAG at
    seeded moments; the trace of every pass's actions."""
    rng = random.Random(seed)
    trace: list[Any] = []
    running: list[str] = []
    for step in range(200):
        actions = run.next_actions()
        trace.append(actions)
        running += [a.name for a in actions if isinstance(a, Launch)]
        if not running:
            break
        if step == 5 and rng.random() < 0.3:
            run.stop(Status.STOPPED, "stopped")
        if rng.random() < 0.1:
            run.stop_op(rng.choice(list(run.ops)))
        name = running.pop(rng.randrange(len(running)))
        status = rng.choice([Status.SUCCEEDED] * 3 + [Status.FAILED, Status.STOPPED])
        run.finished(name, OpRecord(name=name, status=status))
        trace.append(("finished", name, status))
    trace.append(run.undecided())
    return trace


def test_passes_over_what_changed_decide_as_a_pass_over_every_op() -> None:
    for seed in range(120):
        operation, seed = _operation(seed)
        plan = plan_dag(operation)
        ours = _drive(DagRun(plan, {}, {"uuid": "d"}), seed)
        reference = _drive(_FullScan(plan, {}, {"uuid": "d"}), seed)
        assert ours == reference, f"seed {seed}"


def test_a_pass_after_an_end_costs_what_changed_not_the_op_count() -> None:
    ops = [{"name": "root", "component": {"kind": "component", "run": JOB}}]
    ops += [
        {
            "name": f"leaf{i}",
            "dependencies": ["root"],
            "component": {"kind": "component", "run": JOB},
        }
        for i in range(2000)
    ]
    dag = {"kind": "dag", "operations": ops, "concurrency": 4}
    component = Component.model_validate({"kind": "component", "name": "fan", "run": dag})
    run = DagRun(
        plan_dag(Operation.model_validate({"kind": "operation", "component": component})), {}, {}
    )
    decided: list[str] = []
    decide = run._decide
    run._decide = lambda name: decided.append(name) or decide(name)  # type: ignore[method-assign]
    assert [a.name for a in run.next_actions()] == ["root"]
    run.finished("root", OpRecord(name="root", status=Status.SUCCEEDED))
    launched = [a.name for a in run.next_actions()]
    assert launched == ["leaf0", "leaf1", "leaf2", "leaf3"]
    decided.clear()
    run.finished("leaf0", OpRecord(name="leaf0", status=Status.SUCCEEDED))
    assert [a.name for a in run.next_actions()] == ["leaf4"]
    assert len(decided) <= 3, decided  # the freed place, not the 1,995 ops still waiting
