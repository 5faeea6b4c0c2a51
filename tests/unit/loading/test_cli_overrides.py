"""``-HP`` parsed and turned into a matrix as Polyaxon 2.x's CLI does, ``--tags`` split, and the
command line's fields validated with the file's, each problem located at its flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import (
    CliOverrides,
    load_polyaxonfile,
    matrix_from_hparams,
    parse_hparams,
    parse_tags,
    source_of,
)
from polyaxon_prefect.search._matrix_plan import matrix_plan

JOB = """\
version: 1.1
kind: component
name: job
tags: [base]
inputs: [{name: lr, type: float}, {name: act, type: str, value: relu, isOptional: true}]
run: {kind: job, container: {command: [echo, "{{ lr }}"]}}
"""


def test_values_are_read_as_yaml_after_the_first_colon() -> None:
    assert parse_hparams(
        [
            "lr=choice:[0.1,0.01]",
            "epochs=range:1:10:2",
            "rate=linspace:0.001:0.1:5",
            "act=choice:[relu, tanh]",
            "span=range:{start: 1, stop: 3, step: 1}",
        ]
    ) == {
        "lr": {"kind": "choice", "value": [0.1, 0.01]},
        "epochs": {"kind": "range", "value": "1:10:2"},  # not YAML 1.1's base-60 int
        "rate": {"kind": "linspace", "value": "0.001:0.1:5"},
        "act": {"kind": "choice", "value": ["relu", "tanh"]},
        "span": {"kind": "range", "value": {"start": 1, "stop": 3, "step": 1}},
    }


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ("lr", "expected NAME=KIND:VALUE"),
        ("=choice:[1]", "expected NAME=KIND:VALUE"),
        ("lr=choice", "has no kind and value"),
        ("lr=:[1,2]", "has no kind and value"),
        ("lr=choice:", "has no kind and value"),
        ("lr=choice:[1, 2", "is not valid"),
    ],
)
def test_a_bad_item_is_one_problem_at_the_flag(item: str, says: str) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        parse_hparams([item])
    [problem] = info.value.problems
    assert problem.file == "-HP"
    assert says in problem.message
    assert problem.format().startswith("-HP: ")


def test_a_param_given_twice_is_a_problem() -> None:
    with pytest.raises(PolyaxonfileError, match="given twice"):
        parse_hparams(["lr=choice:[1]", "lr=choice:[2]"])


def test_the_matrix_takes_polyaxons_defaults() -> None:
    params = parse_hparams(["lr=choice:[1,2]"])
    assert matrix_from_hparams(params) == {"kind": "grid", "concurrency": 1, "params": params}
    assert matrix_from_hparams(params, kind="random", concurrency=3, num_runs=5) == {
        "kind": "random",
        "concurrency": 3,
        "params": params,
        "numRuns": 5,
    }


def test_tags_are_comma_separated() -> None:
    assert parse_tags("a, b,,c ,a") == ["a", "b", "c"]
    assert parse_tags(None) == [] and parse_tags("") == []


def test_source_of_keeps_a_url_whole() -> None:
    assert source_of("https://host/a/b.yml") == "https://host/a/b.yml"
    assert source_of("dir/file.yaml") == Path("dir/file.yaml")


def _load(tmp_path: Path, overrides: CliOverrides, params: dict[str, str] | None = None):
    path = tmp_path / "job.yaml"
    path.write_text(JOB, encoding="utf-8")
    return load_polyaxonfile(path, params=params, overrides=overrides)


def test_an_hp_grid_over_a_plain_job(tmp_path: Path) -> None:
    matrix = matrix_from_hparams(parse_hparams(["lr=choice:[0.1,0.01]", "act=choice:[relu,tanh]"]))
    loaded = _load(tmp_path, CliOverrides(matrix=matrix))
    assert loaded.operation.matrix is not None
    assert loaded.operation.matrix.kind == "grid"
    assert matrix_plan(loaded.operation.matrix)["total"] == 4


def test_an_hp_replaces_the_files_matrix(tmp_path: Path) -> None:
    (tmp_path / "sweep.yaml").write_text(
        "version: 1.1\nkind: operation\npathRef: job.yaml\n"
        "matrix: {kind: grid, params: {lr: {kind: choice, value: [1, 2, 3]}}}\n",
        encoding="utf-8",
    )
    (tmp_path / "job.yaml").write_text(JOB, encoding="utf-8")
    matrix = matrix_from_hparams(parse_hparams(["lr=choice:[5]"]))
    loaded = load_polyaxonfile(tmp_path / "sweep.yaml", overrides=CliOverrides(matrix=matrix))
    assert loaded.operation.matrix is not None
    assert matrix_plan(loaded.operation.matrix)["total"] == 1


def test_a_bad_hp_kind_is_located_at_the_flag_with_a_hint(tmp_path: Path) -> None:
    matrix = matrix_from_hparams(parse_hparams(["lr=choise:[0.1]"]))
    with pytest.raises(PolyaxonfileError) as info:
        _load(tmp_path, CliOverrides(matrix=matrix))
    [problem] = info.value.problems
    assert problem.format().startswith("-HP: matrix.params.lr.kind: unknown kind `choise`")
    assert problem.hint == "did you mean `choice`?"


def test_a_random_hp_matrix_without_num_runs_says_what_it_needs(tmp_path: Path) -> None:
    matrix = matrix_from_hparams(parse_hparams(["lr=uniform:0:1"]), kind="random")
    with pytest.raises(PolyaxonfileError) as info:
        _load(tmp_path, CliOverrides(matrix=matrix))
    assert all(p.file == "-HP" for p in info.value.problems)
    assert "numRuns" in info.value.problems[0].format()


def test_name_description_and_tags_are_the_operations(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        CliOverrides(name="nightly-run", description="why", tags=("x", "base")),
        {"lr": "0.1"},
    )
    assert loaded.operation.name == "nightly-run"
    assert loaded.operation.description == "why"
    assert loaded.operation.tags == ["base", "x"]  # the file's first, then the new ones


def test_a_bad_name_is_located_at_the_flag(tmp_path: Path) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        _load(tmp_path, CliOverrides(name="no spaces/allowed"), {"lr": "0.1"})
    [problem] = info.value.problems
    assert problem.format().startswith("--name: name: ")
