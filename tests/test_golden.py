"""Golden tests: every example and golden Polyaxonfile compiles to its expected JSON.

Auto-discovered: drop a file into ``examples/`` or ``tests/golden/polyaxonfiles/`` and run
``pytest tests/test_golden.py --update-golden`` to record its expected output; review the diff.
A file that is invalid on purpose records its problems instead of a document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.compiler import compile_document
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SOURCES = sorted(
    [p for p in (ROOT / "examples").rglob("*.yaml")]
    + list((GOLDEN / "polyaxonfiles").glob("*.y*ml"))
)


def _relative(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(str(ROOT)):
        return Path(value).relative_to(ROOT).as_posix()
    return value


def _compile(path: Path) -> dict[str, Any]:
    try:
        return {"document": compile_document(load_polyaxonfile(path))}
    except PolyaxonfileError as error:
        problems = []
        for problem in error.to_list():
            problem["file"] = _relative(problem["file"])
            problems.append(problem)
        return {"problems": problems}


@pytest.mark.parametrize("path", SOURCES, ids=[p.relative_to(ROOT).as_posix() for p in SOURCES])
def test_golden(path: Path, update_golden: bool) -> None:
    name = path.relative_to(ROOT).as_posix().replace("/", "__").rsplit(".", 1)[0] + ".json"
    expected_path = GOLDEN / "expected" / name
    actual = json.loads(json.dumps(_compile(path), default=str))
    if update_golden or not expected_path.exists():
        expected_path.write_text(json.dumps(actual, indent=2, sort_keys=False) + "\n")
        if not update_golden:
            pytest.fail(f"recorded a new golden file {expected_path.name}; review and commit it")
    assert actual == json.loads(expected_path.read_text())
