"""Forms the oldest Polyaxonfiles (schema 0.1-0.4) used: the ``if`` operator in ``run.cmd`` and a
git ref written as a YAML number."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.legacy import upgrade_text
from polyaxon_prefect.loading._load import load_polyaxonfile

IF_FILE = """
version: 1
kind: experiment
declarations:
  lr: 0.1
run:
  cmd:
    if:
      cond: "{{ lr > 0.05 }}"
      do: PYTHON -c "print('large {{ lr }}')"
      else_do: PYTHON -c "print('small {{ lr }}')"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "polyaxonfile.yml"
    path.write_text(textwrap.dedent(text).lstrip().replace("PYTHON", sys.executable))
    return path


def test_upgrade_writes_the_condition_as_jinja_and_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, IF_FILE)
    upgraded = upgrade_text(path.read_text(), file=str(path))
    assert "{% if lr > 0.05 %}" in upgraded and "{% else %}" in upgraded
    assert "NOTE: run.cmd.if: the `if` operator is a Jinja condition over the params" in upgraded


def test_check_shows_the_note_readably(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(_write(tmp_path, IF_FILE))]) == 0
    out = capsys.readouterr().out
    assert "note: run.cmd.if: the `if` operator is a Jinja condition" in out


def test_an_if_operator_without_a_condition_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, IF_FILE.replace('"{{ lr > 0.05 }}"', '" "'))
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(path)
    (problem,) = info.value.problems
    assert "condition is empty" in problem.message
    assert problem.line == 8


@pytest.mark.parametrize("ref", ["1", "20200101", "1.5"])
def test_a_numeric_git_ref_is_read_as_a_ref(tmp_path: Path, ref: str) -> None:
    path = _write(
        tmp_path,
        f"""
        version: 1
        kind: experiment
        build:
          image: python:3.11
          ref: {ref}
        run:
          cmd: echo hi
        """,
    )
    loaded = load_polyaxonfile(path)
    assert loaded.component.run.container.image == "python:3.11"
    assert any(note.startswith("build.ref:") for note in loaded.legacy_notes)
