"""`check` finds every template name the run will not define, each at its string, all at once,
and a YAML boolean, number or null where a command word goes (it would run as ``True``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from polyaxon_prefect import check
from polyaxon_prefect.exceptions import Problem

DAG = """\
version: 1.1
kind: component
inputs:
- {name: marks, type: int, value: 3}
run:
  kind: dag
  operations:
  - name: grade
    params:
      m: {value: "{{ dag.inputs.marks }}"}
      top: {ref: dag, value: inputs.marks}
    conditions: "{{ dag.inputs.marks > 1 and ops.grade is defined and typo }}"
    component:
      inputs: [{name: m, type: int}, {name: top, type: int}]
      run:
        kind: job
        container:
          image: x
          command: [echo, "{{ m }} {{ top }}", "{{ params.mm }}", "{{ ops.grade.outputs.x }}"]
          args: ["{% for i in range(m) %}{{ i }}{% endfor %}", "{{ connections }}", "{{ oops"]
"""


def _problems(tmp_path: Path, text: str) -> list[Problem]:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(textwrap.dedent(text))
    return check(path)


def test_every_undefined_template_name_is_located_at_once(tmp_path: Path) -> None:
    found = [
        (p.line, p.column, p.rule, p.message.split(" in ")[0]) for p in _problems(tmp_path, DAG)
    ]
    assert found == [
        (10, 11, "undefined_template_name", "undefined name `dag`"),
        (12, 5, "undefined_template_name", "undefined name `typo`"),
        (19, 48, "undefined_template_name", "undefined name `params.mm`"),
        (19, 67, "undefined_template_name", "undefined name `ops`"),
        (20, 85, "template", "invalid template syntax"),
    ]


def test_the_hint_says_how_a_dag_input_reaches_an_op(tmp_path: Path) -> None:
    dag_problem = _problems(tmp_path, DAG)[0]
    assert dag_problem.path == ("run", "operations", 0, "params", "m", "value")
    assert dag_problem.hint is not None and "ref: dag" in dag_problem.hint
    assert "defined here: globals, m, params, top" in dag_problem.message


def test_the_names_each_place_defines_pass(tmp_path: Path) -> None:
    valid = """\
    version: 1.1
    kind: component
    inputs:
    - {name: lr, type: float, value: 0.1}
    - {name: out, type: str, value: "{{ globals.run_outputs_path }}/m"}
    outputs: [{name: loss, type: float}]
    hooks: [{hubRef: slack, connection: slack, trigger: failed, conditions: "{{ lr > 0 }}"}]
    termination: {timeout: "{{ 10 * 60 }}"}
    run:
      kind: job
      container:
        image: x
        command: [echo, "{{ lr }}", "{{ params.lr.value }}", "{{ params.as_args }}"]
        args: ["{% set n = 2 %}{{ n }}{{ range(2) | list }}", "{{ params['out'] }}"]
    """
    assert [p for p in _problems(tmp_path, valid) if p.severity == "error"] == []


def test_a_yaml_scalar_command_word_is_located_with_a_quote_hint(tmp_path: Path) -> None:
    job = """\
    version: 1.1
    kind: component
    run:
      kind: job
      container: {image: x, command: [true], args: [--n, 1e3, "ok"]}
    """
    found = [(p.line, p.column, p.rule, p.hint) for p in _problems(tmp_path, job)]
    assert found[0] == (5, 35, "command_word", "quote it: 'true'")
    assert found[1][:3] == (5, 54, "command_word")
    assert found[1][3] is not None and found[1][3].startswith("quote it")
    assert len(found) == 2
