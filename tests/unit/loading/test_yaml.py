from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect._source import parse_yaml as parse_source_yaml
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._yaml import parse_yaml
from polyaxon_prefect.specs import MATRIX_KINDS

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


@pytest.mark.parametrize("kind", MATRIX_KINDS)
def test_every_matrix_kind_nested_under_a_value_names_the_lost_matrix_line(kind: str) -> None:
    text = f"version: 1.1\nkind: operation\nname: sweep\n  kind: {kind}\n"
    with pytest.raises(PolyaxonfileError) as info:
        parse_yaml(text, file="f.yaml")
    hint = info.value.problems[0].hint or ""
    assert f"`kind: {kind}` is a matrix kind" in hint
    assert "`matrix:` on its own line" in hint


def test_the_source_reader_alone_knows_no_kinds() -> None:
    text = "version: 1.1\nkind: operation\nname: sweep\n  kind: grid\n"
    with pytest.raises(PolyaxonfileError) as info:
        parse_source_yaml(text, file="f.yaml")
    hint = info.value.problems[0].hint or ""
    assert "matrix" not in hint
    assert "indented deeper" in hint


def _bomb(levels: int, width: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def _refusal(text: str) -> list[tuple[str | None, int | None, int | None, str]]:
    with pytest.raises(PolyaxonfileError) as refused:
        parse_source_yaml(text, file="f.yaml")
    return [(p.rule, p.line, p.column, p.message) for p in refused.value.problems]


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        (_bomb(6, 5), 1_000),  # runs out inside the last anchor
        (_bomb(4, 9) + "b: [*a3, *a3, {c: *a2}]\n", 9_000),  # in a list after the anchors
        ("a: &a [[[1, 2]]]\nb: " + "[" * 61 + "*a, *a" + "]" * 61 + "\n", 1_000),  # too deep
        ("a: &a [[[1, 2]]]\nb: " + "[" * 50 + "*a, *a" + "]" * 50 + "\n", 60),
        ("a: &a {x: [1, 2, 3]}\nb: {<<: *a, y: [*a, *a, *a, *a, *a, *a, *a, *a, *a]}\n", 40),
        ("z: &z [1, *z]\n", 1_000),  # recursive: too deep, never counted whole
        ("a: &a [1, 2, 3]\n? [k]\n: *a\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n", 40),
    ],
    ids=["bomb", "after-anchors", "deep-alias", "alias-at-depth", "merge-key", "recursive", "key"],
)
def test_a_budget_is_refused_before_building_at_the_node_building_stops_at(
    text: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measuring walk (an alias met again is not walked again) refuses a file before a
    node is built, with the error, node and place that building it would have stopped at."""
    from polyaxon_prefect._source._located_yaml import _Builder

    monkeypatch.setenv("POLYAXON_PREFECT_MAX_YAML_NODES", str(nodes))
    built = []
    build = _Builder.build
    monkeypatch.setattr(_Builder, "build", lambda self, *a: built.append(1) or build(self, *a))
    measured = _refusal(text)
    assert not built, "refused by the measuring walk, before any node is built"
    monkeypatch.setattr(_Builder, "measure", lambda self, root: None)
    assert measured == _refusal(text)  # what building alone says
    assert built
