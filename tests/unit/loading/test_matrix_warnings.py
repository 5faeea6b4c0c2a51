"""What a searched matrix only approximates is a warning of the file: `check` prints it, located
at its line, without importing Optuna (the sweep no longer logs it a second time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.loading import load_polyaxonfile

BAYES = Path(__file__).parents[3] / "examples" / "quick-start" / "hyperparams_bayes.yaml"

DAG = """\
version: 1.1
kind: component
name: pipe
run:
  kind: dag
  operations:
  - name: tune
    matrix:
      kind: hyperopt
      algorithm: tpe
      numRuns: 4
      metric: {name: loss, optimization: minimize}
      params:
        noise: {kind: normal, value: [0, 1]}
        day: {kind: choice, value: [2024-01-01, 2024-02-01]}
        lr: {kind: uniform, value: [0, 1]}
    component:
      inputs:
      - {name: noise, type: float}
      - {name: day, type: str}
      - {name: lr, type: float}
      run: {kind: job, container: {image: x, command: [echo, hi]}}
"""


def test_check_prints_the_bayes_utility_warning_at_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "-f", str(BAYES)]) == 0
    captured = capsys.readouterr()
    assert f"{BAYES}: valid" in captured.out
    [line] = captured.err.splitlines()
    assert line.startswith(
        f"{BAYES}:12:3: matrix.utilityFunction: warning: `utilityFunction` asks for "
        "acquisitionFunction: ucb (kappa: 1.2), nu: 1.9: the search uses log expected "
        "improvement under a Matern 5/2 kernel"
    )
    assert "hint: drop these settings (or `utilityFunction`)" in line


def test_check_json_lists_the_warning_with_its_severity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "-f", str(BAYES), "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["severity"] == "warning" and entry["rule"] == "search_approximation"
    assert (entry["line"], entry["column"]) == (12, 3)
    assert entry["value"] == ["acquisitionFunction: ucb (kappa: 1.2)", "nu: 1.9"]


def test_a_dag_ops_matrix_warnings_are_located_in_its_file(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    path.write_text(DAG)
    loaded = load_polyaxonfile(path)
    where = {w.path[-1]: (w.file, w.line, w.severity) for w in loaded.warnings}
    assert where == {
        "noise": (str(path), 14, "warning"),
        "day": (str(path), 15, "warning"),
    }
    messages = " | ".join(w.message for w in loaded.warnings)
    assert "`noise` is a normal" in messages and "quantile" in messages
    assert "`day` lists dates" in messages
    # the path as written in the component file
    assert loaded.warnings[0].path[:4] == ("run", "operations", 0, "matrix")


def test_a_plain_random_sweep_has_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    random = DAG.replace("kind: hyperopt\n      algorithm: tpe", "kind: random")
    path.write_text(random.replace("      metric: {name: loss, optimization: minimize}\n", ""))
    assert load_polyaxonfile(path).warnings == ()
