from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect._source._yaml import parse_yaml
from polyaxon_prefect.exceptions import PolyaxonfileError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "broken"


def test_positions_point_at_keys_and_items() -> None:
    doc = parse_yaml("a: 1\nb:\n  c: [x, y]\n  d:\n  - e: 2\n", file="f.yaml")
    assert doc.positions.find(("b", "c")) == (3, 3)
    assert doc.positions.find(("b", "d", 0)) == (5, 5)
    assert doc.positions.find(("b", "d", 0, "e")) == (5, 5)
    # unknown sub-paths fall back to the closest ancestor
    assert doc.positions.find(("b", "c", 7, "nope")) == (3, 3)


def test_base60_numbers_stay_strings() -> None:
    # PyYAML's YAML 1.1 reads 1:10:2 as 4202; Polyaxon's range shorthand needs the string.
    assert parse_yaml("r: 1:10:2\nf: 0.5\ni: 12\nb: yes\n").data == {
        "r": "1:10:2",
        "f": 0.5,
        "i": 12,
        "b": True,
    }


def test_duplicate_keys_are_errors_with_location() -> None:
    with pytest.raises(PolyaxonfileError) as info:
        parse_yaml("a: 1\nb: 2\na: 3\n", file="dup.yaml")
    (problem,) = info.value.problems
    assert (problem.line, problem.column, problem.rule) == (3, 1, "duplicate_key")


def test_tabs_get_a_plain_sentence() -> None:
    with pytest.raises(PolyaxonfileError) as info:
        parse_yaml("a:\n\tb: 1\n", file="tab.yaml")
    problem = info.value.problems[0]
    assert problem.line == 2
    assert "tab" in problem.message + (problem.hint or "")


def test_empty_file() -> None:
    with pytest.raises(PolyaxonfileError, match="empty"):
        parse_yaml("# only a comment\n", file="e.yaml")


def test_seed_mapping_without_matrix_key_explains_the_fix() -> None:
    path = FIXTURES / "mapping_missing_matrix.yaml"
    with pytest.raises(PolyaxonfileError) as info:
        parse_yaml(path.read_text(), file=str(path))
    problem = info.value.problems[0]
    assert problem.line == 3
    assert "matrix:" in problem.hint
    assert "values:" in problem.hint


def test_seed_misindented_url_ref_explains_the_fix() -> None:
    path = FIXTURES / "dag_misindented_urlref.yaml"
    with pytest.raises(PolyaxonfileError) as info:
        parse_yaml(path.read_text(), file=str(path))
    problem = info.value.problems[0]
    assert problem.line == 8
    assert "`urlRef`" in problem.hint
    assert "same level as `name`" in problem.hint
