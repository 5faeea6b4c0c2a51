"""A DAG as one Prefect flow run: refs, conditions, joins, nesting, limits, UI records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.prefect import run, to_flow

PY = sys.executable
ROOT = Path(__file__).parents[2]
QUICK_START_DAG = ROOT / "examples" / "quick-start" / "dag.yaml"

# A job that logs its params (as the JSON text output `echo`) and `loss = x * 2`.
ECHO = {
    "name": "echo",
    "inputs": [{"name": "x", "type": "float", "value": 1.0, "isOptional": True}],
    "outputs": [
        {"name": "loss", "type": "float"},
        {"name": "echo", "type": "str"},
    ],
    "run": {
        "kind": "job",
        "container": {
            "command": [
                PY,
                "-c",
                "import json, os; from polyaxon_prefect import tracking; "
                "p = json.loads(os.environ['POLYAXON_PREFECT_PARAMS']); "
                "tracking.log_outputs(loss=p['x'] * 2, echo=json.dumps(p))",
            ]
        },
    },
}


def echo_component(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """`ECHO` with more inputs (all echoed back)."""
    return {**ECHO, "name": None, "inputs": [*ECHO["inputs"], *inputs]}


def sleeper(seconds: float, log: Path | None = None) -> dict[str, Any]:
    """A job that sleeps; with ``log``, it appends ``start end`` stamps to ``log/<op>``."""
    code = "import time, sys; t = time.time(); time.sleep(float(sys.argv[1]))"
    argv = [PY, "-c", code, str(seconds)]
    if log is not None:
        code += (
            "; import os, pathlib; p = pathlib.Path(sys.argv[2], os.environ["
            "'POLYAXON_PREFECT_RUN_NAME']); p.write_text(f'{t} {time.time()}')"
        )
        argv = [PY, "-c", code, str(seconds), str(log)]
    return {"run": {"kind": "job", "container": {"command": argv}}}


def write_dag(folder: Path, name: str, operations: list[dict[str, Any]], **extra: Any) -> Path:
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": name,
        **{k: v for k, v in extra.items() if k not in ("run_extra",)},
        "run": {"kind": "dag", "operations": operations, **extra.get("run_extra", {})},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")
    return path


def settled_task_runs(api: Any, flow_run_id: str, names: set[str]) -> dict[str, Any]:
    """Task runs by name once the server recorded every final state (it does so from events,
    in the background)."""
    deadline = time.monotonic() + 120  # a loaded machine records them late; settled ends it
    while True:
        task_runs = {t.name: t for t in api.task_runs(flow_run_id)}
        if names <= set(task_runs) and all(task_runs[n].state.is_final() for n in names):
            return task_runs
        if time.monotonic() > deadline:
            return task_runs
        time.sleep(0.2)


def echoed(result: Any, op: str) -> dict[str, Any]:
    return json.loads(result.ops[op]["outputs"]["echo"])


# ----------------------------------------------------------------------------- refs, conditions


def test_refs_conditions_joins_task_runs_and_artifact(tmp_path: Path, api: Any):
    ops = [
        {"name": "a", "params": {"x": {"value": 0.5}}, "component": ECHO},
        {"name": "a2", "params": {"x": {"value": 1.5}}, "component": ECHO},
        {
            "name": "b",
            "params": {
                "x": {"ref": "ops.a", "value": "outputs.loss"},
                "a_x": {"ref": "ops.a", "value": "inputs.x"},
                "a_uuid": {"ref": "ops.a", "value": "globals.uuid"},
                "a_status": {"ref": "ops.a", "value": "globals.status"},
                "d_lr": {"ref": "dag", "value": "inputs.lr"},
                "d_project": {"ref": "dag", "value": "globals.project_name"},
                "d_uuid": {"ref": "dag", "value": "globals.uuid"},
            },
            "component": echo_component(
                [
                    {"name": "a_x", "type": "float"},
                    {"name": "a_uuid", "type": "str"},
                    {"name": "a_status", "type": "str"},
                    {"name": "d_lr", "type": "float"},
                    {"name": "d_project", "type": "str"},
                    {"name": "d_uuid", "type": "str"},
                ]
            ),
        },
        {
            "name": "joined",
            "dependencies": ["a", "a2", "b"],
            "joins": [
                {
                    "query": "status: succeeded, outputs.loss: <3",
                    "sort": "-outputs.loss",
                    "params": {"losses": {"value": "outputs.loss"}},
                }
            ],
            "component": echo_component([{"name": "losses", "type": "List[float]"}]),
        },
        {
            "name": "when_true",
            "params": {
                "l": {"ref": "ops.a", "value": "outputs.loss", "contextOnly": True},
                "x": {"value": 10.0},  # loss 20: not in the join
            },
            "conditions": "{{ l > 0.5 and dag.inputs.lr < 1 }}",
            "component": ECHO,
        },
        {
            "name": "when_false",
            "params": {"l": {"ref": "ops.a", "value": "outputs.loss", "contextOnly": True}},
            "conditions": "{{ l > 100 }}",
            "component": ECHO,
        },
        {
            "name": "when_invalid",
            "params": {"l": {"ref": "ops.a", "value": "outputs.loss", "contextOnly": True}},
            "conditions": "{{ l * 3 }}",
            "component": ECHO,
        },
    ]
    inputs = [{"name": "lr", "type": "float", "value": 0.25, "isOptional": True}]
    path = write_dag(tmp_path, "refs-dag", ops, inputs=inputs, cache={"disable": True})

    result = run(path)

    statuses = {name: op["status"] for name, op in result.ops.items()}
    assert statuses == {
        "a": "succeeded",
        "a2": "succeeded",
        "b": "succeeded",
        "joined": "succeeded",
        "when_true": "succeeded",
        "when_false": "skipped",
        "when_invalid": "failed",
    }
    b = echoed(result, "b")
    assert b["x"] == 1.0 and b["a_x"] == 0.5 and b["d_lr"] == 0.25
    assert b["a_uuid"] == result.ops["a"]["uuid"] and b["a_status"] == "succeeded"
    assert b["d_uuid"] == result.uuid and b["d_project"] == "default"
    assert echoed(result, "joined")["losses"] == [2.0, 1.0]  # b (2.0) and a (1.0); a2 is 3.0
    assert "{{ l * 3 }}" in result.ops["when_invalid"]["message"]
    assert "conditions" in result.ops["when_false"]["message"]
    # a failed op fails the DAG and its flow run
    assert result.status == "failed"
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.FAILED
    assert "when_invalid" in flow_run.state.message
    # task runs are named after the ops; edges recorded for ops that ran after an upstream
    task_runs = settled_task_runs(api, result.flow_run_id, set(statuses))
    assert set(statuses) <= set(task_runs)
    assert task_runs["when_false"].state.name == "Skipped"
    edges = task_runs["b"].task_inputs.get("wait_for") or []
    assert [str(e.id) for e in edges] == [str(task_runs["a"].id)]
    # the markdown artifact shows the ops, their edges and final statuses
    [artifact] = [a for a in api.artifacts(result.flow_run_id) if a.key == "refs-dag-dag"]
    assert artifact.type == "markdown"
    assert "| `when_false` |" in artifact.data and "**skipped**" in artifact.data
    assert "- `a` -> `b`" in artifact.data


def test_param_that_cannot_be_resolved_fails_the_op_not_the_load(tmp_path: Path):
    ops = [
        {"name": "skipped", "conditions": "{{ false }}", "component": ECHO},
        {
            "name": "reader",
            "trigger": "all_done",
            "params": {"x": {"ref": "ops.skipped", "value": "outputs.loss"}},
            "component": {**ECHO, "inputs": [{"name": "x", "type": "float"}]},
        },
    ]
    path = write_dag(tmp_path, "unresolved-dag", ops, cache={"disable": True})

    result = run(path)

    assert result.ops["skipped"]["status"] == "skipped"
    assert result.ops["reader"]["status"] == "failed"
    assert "loss" in result.ops["reader"]["message"]


# ----------------------------------------------------------------------------- nesting, components


def test_three_level_nested_dag_passes_inputs_down_and_outputs_up(tmp_path: Path, api: Any):
    leaf = {"name": "leaf", "params": {"x": {"ref": "dag", "value": "inputs.v"}}, "component": ECHO}
    level3 = {
        "name": "level3",
        "inputs": [{"name": "v", "type": "float"}],
        "outputs": [{"name": "loss", "type": "float"}],
        "run": {"kind": "dag", "operations": [leaf]},
    }
    level2 = {
        "name": "level2",
        "inputs": [{"name": "v", "type": "float"}],
        "outputs": [{"name": "loss", "type": "float"}],
        "run": {
            "kind": "dag",
            "operations": [
                {
                    "name": "inner",
                    "params": {"v": {"ref": "dag", "value": "inputs.v"}},
                    "component": level3,
                }
            ],
        },
    }
    ops = [
        {"name": "mid", "params": {"v": {"ref": "dag", "value": "inputs.v"}}, "component": level2},
        {
            "name": "after",
            "params": {"x": {"ref": "ops.mid", "value": "outputs.loss"}},
            "component": ECHO,
        },
    ]
    inputs = [{"name": "v", "type": "float", "value": 1.5, "isOptional": True}]
    path = write_dag(tmp_path, "nested-dag", ops, inputs=inputs, cache={"disable": True})

    result = run(path, {"v": "2.5"})

    assert result.status == "succeeded", result.message
    assert result.ops["mid"]["outputs"] == {"loss": 5.0}
    assert result.ops["mid"]["ops"]["inner"]["ops"]["leaf"]["status"] == "succeeded"
    assert result.ops["after"]["outputs"]["loss"] == 10.0
    # each nested DAG is a subflow run of the DAG's flow run (next to the op's task run)
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    task_runs = settled_task_runs(api, result.flow_run_id, {"mid", "after"})
    assert {"mid", "after"} <= set(task_runs)
    parent = FlowRunFilterParentFlowRunId(any_=[result.flow_run_id])
    with get_client(sync_client=True) as client:
        subflows = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=parent))
    assert [f.name for f in subflows] == ["mid"]
    assert subflows[0].state.type == StateType.COMPLETED


def test_dag_ref_path_ref_and_hub_ref_components(tmp_path: Path):
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "echoer.yaml").write_text(
        yaml.safe_dump({"version": 1.1, "kind": "component", **ECHO, "name": "echoer"}),
        encoding="utf-8",
    )
    (tmp_path / "local.yaml").write_text(
        yaml.safe_dump({"version": 1.1, "kind": "component", **ECHO, "name": "local"}),
        encoding="utf-8",
    )
    ops = [
        {"name": "by_dag_ref", "dagRef": "shared", "params": {"x": {"value": 1.0}}},
        {"name": "by_path_ref", "pathRef": "local.yaml", "params": {"x": {"value": 2.0}}},
        {"name": "by_hub_ref", "hubRef": "echoer", "params": {"x": {"value": 3.0}}},
    ]
    path = write_dag(
        tmp_path,
        "refs-components",
        ops,
        cache={"disable": True},
        run_extra={"components": [{**ECHO, "name": "shared"}]},
    )

    result = run(path, hub_dirs=[hub])

    assert result.status == "succeeded", result.message
    losses = {name: op["outputs"]["loss"] for name, op in result.ops.items()}
    assert losses == {"by_dag_ref": 2.0, "by_path_ref": 4.0, "by_hub_ref": 6.0}


def test_cycle_and_unknown_ref_are_rejected_before_any_flow_run(tmp_path: Path):
    from prefect.client.orchestration import get_client

    def flow_run_count() -> int:
        with get_client(sync_client=True) as client:
            return client.count_flow_runs()

    cycle = write_dag(
        tmp_path,
        "cycle-dag",
        [
            {"name": "a", "dependencies": ["b"], "component": ECHO},
            {"name": "b", "dependencies": ["a"], "component": ECHO},
        ],
    )
    unknown = write_dag(
        tmp_path,
        "unknown-dag",
        [
            {
                "name": "a",
                "params": {"x": {"ref": "ops.nope", "value": "outputs.loss"}},
                "component": ECHO,
            }
        ],
    )
    before = flow_run_count()

    with pytest.raises(PolyaxonfileError, match="cycl"):
        run(cycle)
    with pytest.raises(PolyaxonfileError, match="nope"):
        run(unknown)

    assert flow_run_count() == before


# ----------------------------------------------------------------------------- limits


def test_concurrency_is_never_exceeded(tmp_path: Path):
    log = tmp_path / "stamps"
    log.mkdir()
    ops = [{"name": f"s{i}", "component": sleeper(0.4, log)} for i in range(6)]
    path = write_dag(
        tmp_path, "concurrent-dag", ops, cache={"disable": True}, run_extra={"concurrency": 2}
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    spans = [tuple(map(float, p.read_text().split())) for p in log.iterdir()]
    assert len(spans) == 6
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    overlap = peak = 0
    for _, delta in events:
        overlap += delta
        peak = max(peak, overlap)
    assert peak == 2  # bounded, and the ops did run side by side


def test_one_succeeded_fires_before_the_other_upstream_ends(tmp_path: Path):
    log = tmp_path / "stamps"
    log.mkdir()
    ops = [
        {"name": "fast", "component": sleeper(0.0)},
        {"name": "slow", "component": sleeper(2.0, log)},
        {
            "name": "early",
            "dependencies": ["fast", "slow"],
            "trigger": "one_succeeded",
            "component": sleeper(0.0, log),
        },
    ]
    path = write_dag(tmp_path, "one-dag", ops, cache={"disable": True})

    result = run(path)

    assert result.status == "succeeded", result.message
    early_start = float((log / "early").read_text().split()[0])
    slow_end = float((log / "slow").read_text().split()[1])
    assert early_start < slow_end - 0.5


def test_metric_early_stopping_cancels_in_flight_and_stops_the_rest(tmp_path: Path, api: Any):
    ops = [
        {"name": "good", "params": {"x": {"value": 0.01}}, "component": ECHO},
        {"name": "slow", "component": sleeper(30)},
        {"name": "later", "dependencies": ["good"], "component": ECHO},
    ]
    stopping = [
        {
            "kind": "metric_early_stopping",
            "metric": "loss",
            "value": 0.1,
            "optimization": "minimize",
        }
    ]
    path = write_dag(
        tmp_path,
        "stop-dag",
        ops,
        cache={"disable": True},
        run_extra={"earlyStopping": stopping},
    )

    started = time.monotonic()
    result = run(path)

    assert time.monotonic() - started < 20
    assert result.ops["good"]["status"] == "succeeded"
    assert result.ops["slow"]["status"] == "stopped"
    assert result.ops["later"]["status"] == "stopped"
    assert result.status == "succeeded" and "metric early stopping" in result.reason


def test_failure_early_stopping_fails_the_dag(tmp_path: Path, api: Any):
    ops = [
        {"name": "bad", "component": {"run": {"kind": "job", "container": {"command": ["false"]}}}},
        *(
            {
                "name": f"n{i}",
                "dependencies": ["bad"],
                "trigger": "all_done",
                "component": sleeper(0.0),
            }
            for i in range(3)
        ),
    ]
    stopping = [{"kind": "failure_early_stopping", "percent": 20}]
    path = write_dag(
        tmp_path,
        "fail-stop-dag",
        ops,
        cache={"disable": True},
        run_extra={"earlyStopping": stopping},
    )

    result = run(path)

    assert result.status == "failed" and "failure early stopping" in result.reason
    assert [result.ops[f"n{i}"]["status"] for i in range(3)] == ["stopped"] * 3
    assert api.flow_run(result.flow_run_id).state.type == StateType.FAILED


# ----------------------------------------------------------------------------- entry points


def test_to_flow_takes_the_dag_inputs_as_typed_parameters(tmp_path: Path):
    ops = [{"name": "a", "params": {"x": {"ref": "dag", "value": "inputs.v"}}, "component": ECHO}]
    inputs = [
        {"name": "v", "type": "float", "value": 0.5, "isOptional": True},
        {"name": "top", "type": "int", "value": 5, "isOptional": True},
    ]
    outputs = [{"name": "loss", "type": "float"}]
    path = write_dag(
        tmp_path, "typed-dag", ops, inputs=inputs, outputs=outputs, cache={"disable": True}
    )

    flow = to_flow(path)
    props = flow.parameters.model_dump()["properties"]

    assert props["v"]["type"] == "number" and props["top"]["type"] == "integer"
    assert flow(v=4.0, top=2) == {"loss": 8.0}


def test_cli_json_has_ops_and_live_table_stays_on_stderr(tmp_path: Path, prefect_server: str):
    ops = [
        {"name": "first", "component": ECHO},
        {"name": "second", "dependencies": ["first"], "component": ECHO},
    ]
    path = write_dag(tmp_path, "cli-dag", ops, cache={"disable": True})
    env = {**os.environ, "PREFECT_API_URL": prefect_server}

    done = subprocess.run(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), "--json", "--live"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["status"] == "succeeded"
    assert {name: op["status"] for name, op in payload["ops"].items()} == {
        "first": "succeeded",
        "second": "succeeded",
    }
    assert {"outputs", "uuid"} <= set(payload["ops"]["first"])
    assert "dag cli-dag: succeeded" in done.stderr


def test_quick_start_dag_runs_end_to_end():
    result = run(QUICK_START_DAG, {"max_loss": "100"})

    assert result.status == "succeeded", result.message
    statuses = {name: op["status"] for name, op in result.ops.items()}
    assert statuses == {"experiment": "succeeded", "tune": "skipped", "best_model": "succeeded"}
    assert set(result.ops["experiment"]["outputs"]) == {"loss", "accuracy"}
