"""Forms the oldest Polyaxonfiles (schema 0.1-0.4) used: the ``if`` operator in ``run.cmd`` and a
git ref written as a YAML number."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import new_run_context
from polyaxon_prefect.runtime._one_process import execute_job, prepare_job
from tests.unit.legacy.test_legacy_old_forms import IF_FILE, _write

pytestmark = pytest.mark.process


def _run(path: Path, tmp_path: Path, **params: object) -> str:
    loaded = load_polyaxonfile(path, params=params)
    ctx = new_run_context("legacy-if", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    lines: list[str] = []
    result = execute_job(
        prepare_job(loaded, run_context=ctx, connections={}),
        on_line=lambda _stream, line: lines.append(line),
    )
    assert result.succeeded, result.message
    return "".join(lines)


@pytest.mark.parametrize(("lr", "printed"), [(0.1, "large 0.1"), (0.01, "small 0.01")])
def test_the_if_operator_runs_the_branch_its_condition_picks(
    tmp_path: Path, lr: float, printed: str
) -> None:
    path = _write(tmp_path, IF_FILE)
    assert printed in _run(path, tmp_path, lr=lr)


def test_the_if_operator_without_else_runs_nothing_when_false(tmp_path: Path) -> None:
    text = IF_FILE.replace("      else_do: PYTHON -c \"print('small {{ lr }}')\"\n", "")
    path = _write(tmp_path, text.replace("{{ lr > 0.05 }}", "lr > 0.5"))
    assert "large" not in _run(path, tmp_path)
