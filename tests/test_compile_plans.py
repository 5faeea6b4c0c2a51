"""`polyaxon-prefect compile` prints the plan of every matrix (`x-plan`), at the top level and
for the ops of a DAG, without importing Prefect or Optuna."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.cli import main
from polyaxon_prefect.compiler import compile_document, compile_plan
from polyaxon_prefect.loading._load import load_polyaxonfile

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quick-start"


def compile_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["compile", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_grid_plan_lists_all_40_suggestions_in_product_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = compile_json(capsys, "-f", str(QUICK / "hyperparams_grid.yaml"))["x-plan"]
    assert plan["kind"] == "grid"
    assert plan["total"] == 40 == len(plan["suggestions"])
    rates = [0.001, 0.02575, 0.0505, 0.07525, 0.1]
    expected = [
        {"learning_rate": lr, "dropout": d, "conv_activation": a, "epochs": e}
        for lr in rates
        for d in (0.25, 0.3)
        for a in ("relu", "sigmoid")
        for e in (5, 10)
    ]
    assert [list(s) for s in plan["suggestions"]] == [list(s) for s in expected]
    for got, want in zip(plan["suggestions"], expected, strict=True):
        assert got == pytest.approx(want)


def test_mapping_plan(capsys: pytest.CaptureFixture[str]) -> None:
    plan = compile_json(capsys, "-f", str(QUICK / "mapping.yaml"))["x-plan"]
    assert plan == {
        "kind": "mapping",
        "total": 2,
        "suggestions": [
            {"learning_rate": 0.001, "dropout": 0.25, "conv_activation": "relu", "epochs": 5},
            {"learning_rate": 0.01, "dropout": 0.5, "conv_activation": "sigmoid", "epochs": 5},
        ],
    }


def test_hyperband_plan_in_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "-f", str(QUICK / "hyperparams_hyperband.yaml")]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["matrix"]["kind"] == "hyperband"
    plan = document["x-plan"]
    assert plan["total"] == 206 and plan["budget"] == 1902 and plan["resource"] == "epochs"
    table = [
        [(rung["configs"], rung["resource"]) for rung in bracket["rungs"]]
        for bracket in plan["brackets"]
    ]
    assert table == [
        [(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)],
        [(34, 3), (11, 9), (3, 27), (1, 81)],
        [(15, 9), (5, 27), (1, 81)],
        [(8, 27), (2, 81)],
        [(5, 81)],
    ]
    assert [b["bracket"] for b in plan["brackets"]] == [4, 3, 2, 1, 0]


def test_other_kinds_print_a_count_and_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    random = compile_json(capsys, "-f", str(QUICK / "hyperparams_random.yaml"))["x-plan"]
    assert random["kind"] == "random" and isinstance(random["total"], int)
    assert "random draws" in random["note"]
    bayes = compile_json(capsys, "-f", str(QUICK / "hyperparams_bayes.yaml"))["x-plan"]
    assert bayes["kind"] == "bayes" and "Gaussian process" in bayes["note"]


def test_dag_ops_with_matrices_are_planned(capsys: pytest.CaptureFixture[str]) -> None:
    plan = compile_json(capsys, "-f", str(QUICK / "dag.yaml"))["x-plan"]
    assert list(plan) == ["ops"]
    assert plan["ops"] == {
        "tune": {"kind": "random", "total": 20, "note": "20 distinct random draws (seed 1)"}
    }


NESTED = """
version: 1.1
kind: component
name: outer
run:
  kind: dag
  components:
  - name: inner
    run:
      kind: dag
      operations:
      - name: sweep
        matrix:
          kind: mapping
          values: [{x: 1}, {x: 2}]
        component:
          inputs: [{name: x, type: int}]
          run: {kind: job, container: {image: busybox, command: [echo, "{{ x }}"]}}
  operations:
  - name: grid
    matrix:
      kind: grid
      params:
        x: {kind: range, value: "0:3:1"}
    component:
      inputs: [{name: x, type: int}]
      run: {kind: job, container: {image: busybox, command: [echo, "{{ x }}"]}}
  - name: plain
    component:
      run: {kind: job, container: {image: busybox}}
  - name: nested
    dagRef: inner
"""


def test_nested_dags_and_dag_refs_are_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nested.yaml"
    path.write_text(NESTED)
    plan = compile_json(capsys, "-f", str(path))["x-plan"]
    assert plan == {
        "ops": {
            "grid": {"kind": "grid", "total": 3, "suggestions": [{"x": 0}, {"x": 1}, {"x": 2}]},
            "nested": {
                "ops": {
                    "sweep": {"kind": "mapping", "total": 2, "suggestions": [{"x": 1}, {"x": 2}]}
                }
            },
        }
    }


def test_no_plan_without_a_matrix_or_with_no_plan_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    typed = str(QUICK / "typed.yaml")
    assert "x-plan" not in compile_json(capsys, "-f", typed, "-P", "epochs=1")
    grid = str(QUICK / "hyperparams_grid.yaml")
    assert "x-plan" not in compile_json(capsys, "-f", grid, "--no-plan")


def test_compile_document_itself_is_unchanged() -> None:
    loaded = load_polyaxonfile(QUICK / "hyperparams_grid.yaml")
    assert "x-plan" not in compile_document(loaded)
    assert compile_plan(loaded)["total"] == 40  # type: ignore[index]
    assert compile_plan(load_polyaxonfile(QUICK / "typed.yaml", params={"epochs": 1})) is None


@pytest.mark.process
def test_compile_imports_neither_prefect_nor_optuna() -> None:
    script = (
        "import sys, io, contextlib\n"
        "from polyaxon_prefect.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    for name in ('hyperparams_grid', 'hyperparams_hyperband', 'dag'):\n"
        f"        assert main(['compile', '-f', {str(QUICK)!r} + '/' + name + '.yaml']) == 0\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'optuna'))\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]"
