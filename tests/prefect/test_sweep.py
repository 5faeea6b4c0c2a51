"""Matrix sweeps as Prefect flow runs: every kind on a tiny component, under the harness."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.prefect import run

SCRIPT = Path(__file__).with_name("sweep_script.py")

COMPONENT = f"""\
version: 1.1
kind: component
name: sweep-trial
tags: [tests, sweep]
inputs:
- {{name: x, type: float, value: 0.5, isOptional: true}}
- {{name: marks, type: str}}
- {{name: steps, type: int, value: 1, isOptional: true}}
- {{name: sleep, type: float, value: 0.0, isOptional: true}}
- {{name: penalty, type: float, value: 0.0, isOptional: true}}
- {{name: fail_over, type: float, isOptional: true}}
- {{name: hold_over, type: float, isOptional: true}}
- {{name: epochs, type: int, isOptional: true}}
outputs:
- {{name: loss, type: float}}
- {{name: resource_type, type: str}}
run:
  kind: job
  container:
    command: [{sys.executable}, {SCRIPT}]
"""


def sweep_file(folder: Path, matrix: str, *, params: str = "", name: str = "sweep") -> Path:
    """An operation with ``matrix`` over the trial component, marks under ``folder/marks``."""
    (folder / "trial.yaml").write_text(COMPONENT, encoding="utf-8")
    text = (
        "version: 1.1\nkind: operation\n"
        f"name: {name}\n"
        f"params:\n  marks: {{value: '{folder / 'marks'}'}}\n"
        + textwrap.indent(textwrap.dedent(params), "  ")
        + "matrix:\n"
        + textwrap.indent(textwrap.dedent(matrix), "  ")
        + "pathRef: trial.yaml\n"
    )
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def marks(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "marks").glob("*.json"))]


def test_grid_runs_every_point_in_order_as_named_child_flow_runs(tmp_path: Path, api: Any):
    path = sweep_file(
        tmp_path,
        """\
        kind: grid
        concurrency: 2
        params:
          x: {kind: choice, value: [0.1, 0.3]}
          penalty: {kind: linspace, value: 0:1:3}
        """,
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    trials = result.trials
    assert [t["index"] for t in trials] == list(range(6))
    assert [(t["params"]["x"], t["params"]["penalty"]) for t in trials] == [
        (0.1, 0.0), (0.1, 0.5), (0.1, 1.0), (0.3, 0.0), (0.3, 0.5), (0.3, 1.0),
    ]  # fmt: skip
    assert all(t["status"] == "succeeded" and t["uuid"] for t in trials)
    assert trials[3]["outputs"]["loss"] == pytest.approx(0.0)
    assert len(marks(tmp_path)) == 6
    flow_run = api.flow_run(result.flow_run_id)
    assert flow_run.state.type == StateType.COMPLETED
    # one `trials` task run of the sweep is the parent of every trial's child flow run
    task_runs = [t for t in api.task_runs(result.flow_run_id) if t.name == "trials"]
    assert len(task_runs) == 1 and task_runs[0].state.type == StateType.COMPLETED
    children = _child_flow_runs(result.flow_run_id)
    assert sorted(c.name for c in children) == sorted(
        f"trial-{t['index']} x={t['params']['x']:g} penalty={t['params']['penalty']:g}"
        for t in trials
    )
    assert all(c.state.type == StateType.COMPLETED for c in children)
    artifacts = {a.key: a for a in api.artifacts(result.flow_run_id) if a.key}
    assert artifacts["sweep-progress"].type == "progress"
    assert float(artifacts["sweep-progress"].data) == 100.0
    leaderboard = json.loads(artifacts["sweep-leaderboard"].data)
    assert len(leaderboard) == 6 and "penalty" in leaderboard[0]
    assert artifacts["sweep-best"].type == "markdown"


def _child_flow_runs(parent_flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
    )

    with get_client(sync_client=True) as client:
        return client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent_flow_run_id])
            )
        )


def test_concurrency_is_never_exceeded(tmp_path: Path):
    path = sweep_file(
        tmp_path,
        """\
        kind: mapping
        concurrency: 2
        values: [{x: 0.1}, {x: 0.2}, {x: 0.3}, {x: 0.4}, {x: 0.5}]
        """,
        params="sleep: {value: 1.5}\n",
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    assert [t["params"] for t in result.trials] == [{"x": x / 10} for x in range(1, 6)]
    spans = [(m["start"], m["end"]) for m in marks(tmp_path)]
    assert len(spans) == 5
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    overlap = peak = 0
    for _, delta in events:
        overlap += delta
        peak = max(peak, overlap)
    assert peak == 2


def test_random_is_seeded_and_keys_outside_inputs_are_context_only(tmp_path: Path):
    matrix = """\
        kind: random
        numRuns: 4
        seed: 11
        params:
          x: {kind: uniform, value: 0:1}
          note: {kind: choice, value: [a, b, c]}
        """
    first = run(sweep_file(tmp_path / "a" if _mk(tmp_path / "a") else tmp_path, matrix))
    second = run(sweep_file(tmp_path / "b" if _mk(tmp_path / "b") else tmp_path, matrix))

    assert first.status == second.status == "succeeded", first.message
    assert [t["params"] for t in first.trials] == [t["params"] for t in second.trials]
    assert len({t["params"]["x"] for t in first.trials}) == 4
    # `note` is no input: it reached the process as a contextOnly param
    seen = [m["params"].get("note") for m in marks(tmp_path / "a")]
    assert sorted(seen) == sorted(t["params"]["note"] for t in first.trials)


def _mk(folder: Path) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    return True


@pytest.mark.parametrize(
    "matrix",
    [
        """\
        kind: bayes
        numInitialRuns: 2
        maxIterations: 4
        seed: 3
        metric: {name: loss, optimization: minimize}
        utilityFunction: {acquisitionFunction: ei, eps: 0.0}
        params:
          x: {kind: uniform, value: 0:1}
        """,
        *(
            f"""\
        kind: hyperopt
        algorithm: {algorithm}
        numRuns: 4
        seed: 3
        metric: {{name: loss, optimization: minimize}}
        params:
          x: {{kind: uniform, value: 0:1}}
        """
            for algorithm in ("tpe", "rand", "anneal")
        ),
    ],
    ids=["bayes", "hyperopt-tpe", "hyperopt-rand", "hyperopt-anneal"],
)
def test_searching_kinds_run_and_report_the_best(tmp_path: Path, matrix: str):
    result = run(sweep_file(tmp_path, matrix))

    assert result.status == "succeeded", result.message
    # bayes: numInitialRuns random trials, then maxIterations model-based ones
    assert len(result.trials) == (6 if "bayes" in matrix else 4)
    assert all(0 <= t["params"]["x"] <= 1 for t in result.trials)
    best = min(result.trials, key=lambda t: t["value"])
    assert result.best is not None and result.best["index"] == best["index"]
    assert result.best["value"] == pytest.approx((best["params"]["x"] - 0.3) ** 2)
    assert result.outputs["loss"] == pytest.approx(result.best["value"])


def test_hyperband_injects_the_resource_with_its_type(tmp_path: Path):
    path = sweep_file(
        tmp_path,
        """\
        kind: hyperband
        maxIterations: 3
        eta: 3
        seed: 1
        resource: {name: epochs, type: int}
        metric: {name: loss, optimization: minimize}
        params:
          x: {kind: uniform, value: 0:1}
        """,
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    # s_max = 1: bracket 1 runs 3 configs at 1 then the best at 3; bracket 0 runs 2 at 3
    resources = sorted(t["params"]["epochs"] for t in result.trials)
    assert resources == [1, 1, 1, 3, 3, 3]
    assert all(type(t["params"]["epochs"]) is int for t in result.trials)
    assert {t["outputs"]["resource_type"] for t in result.trials} == {"int"}


TUNER = """\
version: 1.1
kind: component
name: my-tuner
inputs:
- {name: matrix, type: dict}
- {name: iteration, type: int}
- {name: configs, type: list}
- {name: metrics, type: list}
outputs:
- {name: suggestions, type: list}
run:
  kind: job
  container:
    command:
    - %s
    - -c
    - |
      from polyaxon_prefect import tracking
      p = tracking.get_params()
      i = p["iteration"]
      assert len(p["configs"]) == len(p["metrics"]) == 2 * i
      nxt = [{"x": 0.1 * (i + 1)}, {"x": 0.2 * (i + 1)}]
      tracking.log_outputs(suggestions=nxt if i < 2 else [])
"""


def test_iterative_runs_the_tuner_until_it_returns_nothing(tmp_path: Path):
    (tmp_path / "my-tuner.yaml").write_text(TUNER % sys.executable, encoding="utf-8")
    path = sweep_file(
        tmp_path,
        """\
        kind: iterative
        maxIterations: 5
        tuner: {hubRef: my-tuner}
        """,
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    assert [t["params"]["x"] for t in result.trials] == pytest.approx([0.1, 0.2, 0.2, 0.4])


def test_median_policy_prunes_a_bad_trial(tmp_path: Path):
    path = sweep_file(
        tmp_path,
        """\
        kind: mapping
        concurrency: 1
        values:
        - {x: 0.3, steps: 3, sleep: 0.0}
        - {x: 0.35, steps: 3, sleep: 0.0}
        - {x: 0.28, steps: 3, sleep: 0.0}
        - {x: 3.0, steps: 40, sleep: 0.1}
        earlyStopping:
        - kind: metric_early_stopping
          metric: loss
          value: -1
          optimization: minimize
          policy: {kind: median, minSamples: 2}
        """,
    )

    result = run(path)

    statuses = [t["status"] for t in result.trials]
    assert statuses == ["succeeded", "succeeded", "succeeded", "stopped"], result.message
    assert "pruned" in result.trials[3]["message"]
    assert result.status == "succeeded"


def test_metric_early_stopping_stops_launching(tmp_path: Path):
    path = sweep_file(
        tmp_path,
        """\
        kind: grid
        concurrency: 1
        params:
          x: {kind: choice, value: [0.1, 0.3, 0.5, 0.7, 0.9]}
        earlyStopping:
        - {kind: metric_early_stopping, metric: loss, value: 0.001, optimization: minimize}
        """,
    )

    result = run(path)

    assert result.status == "succeeded"
    assert "metric early stopping" in result.reason
    assert [t["params"]["x"] for t in result.trials] == [0.1, 0.3]
    assert len(marks(tmp_path)) == 2


def test_failure_early_stopping_fails_the_sweep(tmp_path: Path, api: Any):
    path = sweep_file(
        tmp_path,
        """\
        kind: grid
        concurrency: 1
        params:
          x: {kind: choice, value: [0.6, 0.7, 0.1, 0.2, 0.3, 0.4]}
        earlyStopping:
        - {kind: failure_early_stopping, percent: 30}
        """,
        params="fail_over: {value: 0.5}\n",
    )

    result = run(path)

    assert result.status == "failed"
    assert "failure early stopping" in result.reason
    assert [t["status"] for t in result.trials] == ["failed", "failed"]
    assert api.flow_run(result.flow_run_id).state.type == StateType.FAILED


def test_cli_json_has_trials_and_best(tmp_path: Path, capsys: Any):
    from polyaxon_prefect.cli import main

    path = sweep_file(
        tmp_path,
        """\
        kind: mapping
        values: [{x: 0.2}, {x: 0.4}]
        earlyStopping:
        - {kind: metric_early_stopping, metric: loss, value: -1, optimization: minimize}
        """,
    )

    code = main(["run", "-f", str(path), "--json"])

    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["status"] == "succeeded"
    assert [t["params"] for t in payload["trials"]] == [{"x": 0.2}, {"x": 0.4}]
    assert {"index", "params", "status", "outputs", "uuid"} <= set(payload["trials"][0])
    assert payload["best"]["index"] in (0, 1)


def test_a_dag_with_a_matrix_runs_each_trial_as_a_dag(tmp_path: Path):
    (tmp_path / "trial.yaml").write_text(COMPONENT, encoding="utf-8")
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        textwrap.dedent(
            f"""\
            version: 1.1
            kind: operation
            name: dag-sweep
            matrix:
              kind: mapping
              values: [{{x: 0.1}}, {{x: 0.3}}]
            component:
              name: pipeline
              inputs:
              - {{name: x, type: float}}
              run:
                kind: dag
                operations:
                - name: first
                  pathRef: trial.yaml
                  params:
                    x: {{ref: dag, value: inputs.x}}
                    marks: {{value: '{tmp_path / "marks"}'}}
            """
        ),
        encoding="utf-8",
    )

    result = run(dag)

    assert result.status == "succeeded", result.message
    assert [t["status"] for t in result.trials] == ["succeeded", "succeeded"]
    assert sorted(m["params"]["x"] for m in marks(tmp_path)) == [0.1, 0.3]
