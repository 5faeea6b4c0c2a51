"""Every trigger against every upstream outcome, as real DAG flow runs under the harness.

One DAG holds many small independent sub-graphs: producer ops that end in each outcome
(succeeded, failed, skipped by a false condition, upstream_failed, stopped, crashed by SIGKILL),
and for each trigger, each ``skipOnUpstreamSkip`` value and each combination of one or two
producers, a downstream op. The expected status of every downstream op comes from the oracle
below, written from the documented rules (docs/dag-triggers.md), not from the scheduler's code.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect._dag import stop_op

TRIGGERS = ("all_succeeded", "all_failed", "all_done", "one_succeeded", "one_failed", "one_done")
OUTCOMES = ("succeeded", "failed", "skipped", "upstream_failed", "stopped", "crashed")
PRODUCED = {"crashed": "failed"}  # a process killed by a signal is `failed`
FAILED = {"failed", "upstream_failed"}


def expected(trigger: str, upstreams: tuple[str, ...], skip_on_upstream_skip: bool) -> str:
    """The oracle: the final status of an op whose upstreams all ended as ``upstreams``."""
    statuses = [PRODUCED.get(s, s) for s in upstreams]
    if skip_on_upstream_skip and "skipped" in statuses:
        return "skipped"
    statuses = ["succeeded" if s == "skipped" else s for s in statuses]
    wanted = trigger.split("_", 1)[1]
    match = {
        "succeeded": lambda s: s == "succeeded",
        "failed": lambda s: s in FAILED,
        "done": lambda s: True,
    }[wanted]
    hits = [match(s) for s in statuses]
    ok = any(hits) if trigger.startswith("one_") else all(hits)
    return "succeeded" if ok else "upstream_failed"


def settled_task_runs(api: Any, flow_run_id: str, names: set[str]) -> dict[str, Any]:
    """The flow run's task runs by name, once the server has recorded every final state (it
    records task-run states from events, in the background)."""
    deadline = time.monotonic() + 120  # a loaded machine records them late; settled ends it
    while True:
        task_runs = {t.name: t for t in api.task_runs(flow_run_id)}
        settled = names <= set(task_runs) and all(
            task_runs[n].state is not None and task_runs[n].state.is_final() for n in names
        )
        if settled or time.monotonic() > deadline:
            return task_runs
        time.sleep(0.2)


def _producers(copies: int, marks: Path) -> list[dict[str, Any]]:
    python = sys.executable
    ops: list[dict[str, Any]] = []
    for i in range(1, copies + 1):
        mark = marks / f"stopped-{i}"
        ops += [
            {"name": f"succeeded{i}", "dagRef": "noop"},
            {"name": f"failed{i}", "dagRef": "fail"},
            {"name": f"skipped{i}", "dagRef": "noop", "conditions": "{{ 1 > 2 }}"},
            {"name": f"upstream_failed{i}", "dagRef": "noop", "dependencies": [f"failed{i}"]},
            {
                "name": f"stopped{i}",
                "component": {
                    "run": {
                        "kind": "job",
                        "container": {
                            "command": [
                                python,
                                "-c",
                                "import pathlib, sys, time; "
                                "pathlib.Path(sys.argv[1]).write_text('up'); time.sleep(60)",
                                str(mark),
                            ]
                        },
                    }
                },
            },
            {
                "name": f"crashed{i}",
                "component": {
                    "run": {
                        "kind": "job",
                        "container": {
                            "command": [
                                python,
                                "-c",
                                "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                            ]
                        },
                    }
                },
            },
        ]
    return ops


def _dag(path: Path, downstream: dict[str, tuple[str, tuple[str, ...], bool]]) -> Path:
    copies = max(len(ups) for _, ups, _ in downstream.values())
    ops = _producers(copies, path.parent)
    for name, (trigger, ups, flag) in downstream.items():
        deps = [f"{outcome}{i}" for i, outcome in enumerate(ups, start=1)]
        op: dict[str, Any] = {"name": name, "dagRef": "noop", "dependencies": deps}
        op["trigger"] = trigger
        if flag:
            op["skipOnUpstreamSkip"] = True
        ops.append(op)
    noop = {"name": "noop", "run": {"kind": "job", "container": {"command": ["true"]}}}
    fail = {"name": "fail", "run": {"kind": "job", "container": {"command": ["false"]}}}
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": path.stem,
        "cache": {"disable": True},
        "run": {"kind": "dag", "components": [noop, fail], "operations": ops},
    }
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")
    return path


def _stopper(marks: Path, copies: int, done: threading.Event) -> threading.Thread:
    """Stop each ``stopped<i>`` op once its process has started (it writes a mark file)."""

    def watch() -> None:
        pending = set(range(1, copies + 1))
        while pending and not done.is_set():
            for i in sorted(pending):
                if (marks / f"stopped-{i}").exists() and stop_op(f"stopped{i}"):
                    pending.discard(i)
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _run_table(tmp_path: Path, downstream: dict[str, tuple[str, tuple[str, ...], bool]]) -> Any:
    path = _dag(tmp_path / "trigger-table.yaml", downstream)
    copies = max(len(ups) for _, ups, _ in downstream.values())
    done = threading.Event()
    thread = _stopper(tmp_path, copies, done)
    try:
        result = run(path)
    finally:
        done.set()
        thread.join(5)
    return result


def _check(result: Any, api: Any, downstream: dict[str, tuple[str, tuple[str, ...], bool]]):
    ops = result.ops
    copies = max(len(ups) for _, ups, _ in downstream.values())
    for i in range(1, copies + 1):
        for outcome in OUTCOMES:
            assert ops[f"{outcome}{i}"]["status"] == PRODUCED.get(outcome, outcome), outcome
    assert "killed by signal SIGKILL" in ops["crashed1"]["message"]
    wrong = {
        name: (ops[name]["status"], expected(trigger, ups, flag))
        for name, (trigger, ups, flag) in downstream.items()
        if ops[name]["status"] != expected(trigger, ups, flag)
    }
    assert wrong == {}
    # The DAG has failed ops, so it failed, and so did its flow run.
    assert result.status == "failed"
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.FAILED
    # Every op is a task run named after it, in a final state (never a pending NotReady).
    task_runs = settled_task_runs(api, result.flow_run_id, set(ops))
    assert set(ops) <= set(task_runs)
    assert all(t.state.is_final() for t in task_runs.values())
    for name, op in ops.items():
        state = task_runs[name].state
        want = {
            "succeeded": (StateType.COMPLETED, None),
            "skipped": (StateType.COMPLETED, "Skipped"),
            "failed": (StateType.FAILED, None),
            "upstream_failed": (StateType.CANCELLED, "UpstreamFailed"),
            "stopped": (StateType.CANCELLED, None),
        }[op["status"]]
        assert state.type == want[0], name
        if want[1]:
            assert state.name == want[1], name


def test_one_upstream_every_trigger_and_outcome(tmp_path: Path, api: Any):
    downstream = {
        f"{trigger}-{'skip' if flag else 'keep'}-{outcome}": (trigger, (outcome,), flag)
        for trigger in TRIGGERS
        for flag in (False, True)
        for outcome in OUTCOMES
    }

    result = _run_table(tmp_path, downstream)

    _check(result, api, downstream)
    # spot checks of the oracle itself, against the words
    assert result.ops["all_succeeded-keep-skipped"]["status"] == "succeeded"
    assert result.ops["all_succeeded-skip-skipped"]["status"] == "skipped"
    assert result.ops["all_failed-keep-crashed"]["status"] == "succeeded"
    assert result.ops["all_done-keep-stopped"]["status"] == "succeeded"
    assert result.ops["one_failed-keep-stopped"]["status"] == "upstream_failed"


def test_two_upstreams_every_trigger_and_pair_of_outcomes(tmp_path: Path, api: Any):
    # skipOnUpstreamSkip only matters when an upstream is skipped: the other pairs are run
    # without it only (the one-upstream table shows the flag changes nothing else)
    downstream = {
        f"{trigger}-{'skip' if flag else 'keep'}-{a}-{b}": (trigger, (a, b), flag)
        for trigger in TRIGGERS
        for a, b in itertools.combinations_with_replacement(OUTCOMES, 2)
        for flag in ((False, True) if "skipped" in (a, b) else (False,))
    }

    result = _run_table(tmp_path, downstream)

    _check(result, api, downstream)
    assert result.ops["one_succeeded-keep-succeeded-failed"]["status"] == "succeeded"
    assert result.ops["one_succeeded-keep-failed-stopped"]["status"] == "upstream_failed"
    assert result.ops["one_done-skip-succeeded-skipped"]["status"] == "skipped"
    assert result.ops["all_failed-keep-failed-crashed"]["status"] == "succeeded"
    assert result.ops["all_done-keep-upstream_failed-stopped"]["status"] == "succeeded"
