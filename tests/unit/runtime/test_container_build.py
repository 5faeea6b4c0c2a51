"""An op's own ``build:`` section as the build operation it stands for."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.runtime.docker._container_build import build_operation, load_build
from polyaxon_prefect.specs import Build


def _build(**fields: object) -> Build:
    return Build.model_validate({"hubRef": "kaniko", **fields})


def test_the_build_section_becomes_an_operation_of_its_builder_component() -> None:
    build = _build(
        params={"destination": {"value": {"name": "img:1"}}},
        runPatch={"init": [{"dockerfile": {"image": "base"}}]},
        connection="registry",
    )
    assert build_operation(build, "train") == {
        "version": 1.1,
        "kind": "operation",
        "name": "train-build",
        "hubRef": "kaniko",
        "params": {"destination": {"value": {"name": "img:1"}}},
        "runPatch": {"init": [{"dockerfile": {"image": "base"}}]},
        "connection": "registry",
    }


def test_a_build_section_is_loaded_with_its_builder_and_leaves_no_file(tmp_path: Path) -> None:
    build = _build(params={"destination": {"value": {"name": "img:1"}}})
    loaded = load_build(build, "train", tmp_path)
    assert loaded.operation.component is not None
    assert loaded.operation.component.name == "kaniko"
    assert list(tmp_path.iterdir()) == []


def test_a_build_sections_problem_is_located_under_build(tmp_path: Path) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        load_build(_build(params={"nope": {"value": 1}}), "train", tmp_path)
    assert all(p.path[:1] == ("build",) for p in info.value.problems), info.value.problems
