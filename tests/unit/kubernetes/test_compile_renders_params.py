"""``compile --target kubernetes`` renders the params it knows, so its output applies as is;
only what a submission knows (``globals``, connections, upstream outputs) stays a template."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.cli import main

PYTORCHJOB = """\
version: 1.1
kind: component
inputs:
- {name: lr, type: float, value: 0.01}
- {name: workers, type: int, value: 2}
run:
  kind: pytorchjob
  master:
    replicas: 1
    container:
      image: img
      command: [python, train.py, "--lr={{ lr }}", "--out={{ globals.run_outputs_path }}/m"]
      env: [{name: LR, value: "{{ lr }}"}]
  worker:
    replicas: "{{ workers }}"
    container: {image: img, command: [python, train.py, "--lr={{ lr }}"]}
"""


def _compile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *args: str
) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(text)
    assert main(["compile", "-f", str(path), "--target", "kubernetes", *args]) == 0
    out, err = capsys.readouterr()
    return [doc for doc in yaml.safe_load_all(out) if doc is not None], err


def test_params_are_rendered_and_the_manifest_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], validate: Callable[[dict[str, Any]], None]
) -> None:
    (job,), err = _compile(tmp_path, capsys, PYTORCHJOB, "-P", "lr=0.5")
    validate(job)
    specs = job["spec"]["pytorchReplicaSpecs"]
    master = specs["Master"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert master["command"][2:] == ["--lr=0.5", "--out={{ globals.run_outputs_path }}/m"]
    assert worker["command"][2:] == ["--lr=0.5"]
    assert {"name": "LR", "value": "0.5"} in master["env"]
    assert specs["Worker"]["replicas"] == 2
    assert "{{ lr }}" not in yaml.safe_dump(job)
    assert "globals, connections, an upstream op's outputs" in err


def test_a_dag_ops_upstream_output_stays_a_template_its_own_params_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], validate: Callable[[dict[str, Any]], None]
) -> None:
    dag = """\
    version: 1.1
    kind: component
    run:
      kind: dag
      operations:
      - name: train
        params: {lr: {value: 0.1}}
        component:
          inputs: [{name: lr, type: float}]
          outputs: [{name: loss, type: float}]
          run: {kind: job, container: {image: img, command: [train, "--lr={{ lr }}"]}}
      - name: report
        params: {loss: {ref: ops.train, value: outputs.loss}, top: {value: 3}}
        component:
          inputs: [{name: loss, type: float}, {name: top, type: int}]
          run: {kind: job, container: {image: img, command: [report, "{{ loss }}", "{{ top }}"]}}
    """
    jobs, _ = _compile(tmp_path, capsys, "\n".join(line[4:] for line in dag.splitlines()) + "\n")
    for job in jobs:
        validate(job)
    commands = [job["spec"]["template"]["spec"]["containers"][0]["command"] for job in jobs]
    assert commands == [["train", "--lr=0.1"], ["report", "{{ loss }}", "3"]]
