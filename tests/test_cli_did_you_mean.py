"""`check` suggests the name a DAG op most likely meant: an unknown dependency, an unknown
``ref: ops.X`` and an unknown output of a known op each get a located `did you mean` hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.cli import main

DAG = """\
version: 1.1
kind: component
name: pipe
run:
  kind: dag
  operations:
  - name: train
    component:
      outputs: [{{name: loss, type: float}}]
      run: {{kind: job, container: {{image: x, command: [echo, hi]}}}}
  - name: evaluate
    dependencies: [{dependency}]
    params:
      loss: {{ref: {ref}, value: {value}}}
    component:
      inputs: [{{name: loss, type: float}}]
      run: {{kind: job, container: {{image: x, command: [echo, hi]}}}}
"""


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], **parts: str) -> list[str]:
    path = tmp_path / "pipe.yaml"
    values = {"dependency": "train", "ref": "ops.train", "value": "outputs.loss", **parts}
    path.write_text(DAG.format(**values))
    assert main(["check", "-f", str(path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "1 problem found."
    return [line.replace(str(path), "pipe.yaml") for line in lines[:-1]]


def test_an_unknown_dependency_gets_the_close_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(tmp_path, capsys, dependency="trian") == [
        "pipe.yaml:12:20: run.operations[1].dependencies[0]: operation `evaluate` depends on "
        "`trian`, which is not an operation of this DAG; hint: did you mean `train`?"
    ]


def test_an_unknown_ref_op_gets_the_close_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [line] = _check(tmp_path, capsys, ref="ops.trainn")
    assert line.startswith("pipe.yaml:14:7: run.operations[1].params.loss: ")
    assert "depends on `trainn`" in line and line.endswith("hint: did you mean `train`?")


def test_an_unknown_output_gets_the_close_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [line] = _check(tmp_path, capsys, value="outputs.los")
    assert line.startswith("pipe.yaml:14:30: run.operations[1].params.loss.value: ")
    assert line.endswith("hint: did you mean `outputs.loss`?")


def test_a_name_close_to_nothing_lists_what_there_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [line] = _check(tmp_path, capsys, dependency="zzz")
    assert line.endswith("hint: known operations: train, evaluate")
    [line] = _check(tmp_path, capsys, value="outputs.nope")
    assert "hint: it provides: artifacts, globals" in line and "did you mean" not in line
