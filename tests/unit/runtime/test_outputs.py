"""Reading a run's outputs and checking them against the component's declared outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.runtime import OutputsError, read_outputs, validate_outputs
from polyaxon_prefect.specs.params._io import IO


def _io(**data) -> IO:
    return IO.model_validate(data)


DECLARED = [
    _io(name="accuracy", type="float"),
    _io(name="model_path", type="path", isOptional=True),
    _io(name="epochs", type="int", value=10),
]


def test_valid_outputs_are_typed_and_defaults_filled() -> None:
    typed, problems = validate_outputs(DECLARED, {"accuracy": "0.93", "model_path": "/m"})
    assert problems == []
    assert typed == {"accuracy": 0.93, "model_path": "/m", "epochs": 10}


def test_missing_required_output_is_a_problem() -> None:
    typed, problems = validate_outputs(DECLARED, {})
    assert [p.rule for p in problems] == ["output_missing"]
    assert "`accuracy` is not optional" in problems[0].message
    assert "tracking.log_outputs(accuracy=...)" in (problems[0].hint or "")
    assert typed == {"model_path": None, "epochs": 10}


def test_wrong_type_is_a_problem() -> None:
    _, problems = validate_outputs(DECLARED, {"accuracy": "high"})
    assert [p.rule for p in problems] == ["output_type"]
    assert problems[0].path == ("outputs", "accuracy")
    assert "is not a `float`" in problems[0].message


def test_undeclared_output_lists_the_declared_names() -> None:
    _, problems = validate_outputs(DECLARED, {"accuracy": 0.9, "acc": 0.9})
    assert [p.rule for p in problems] == ["output_undeclared"]
    assert "`acc`" in problems[0].message
    assert "`accuracy`, `model_path`, `epochs`" in problems[0].message


def test_validation_rules_apply_to_outputs() -> None:
    declared = [_io(name="accuracy", type="float", validation={"ge": 0, "le": 1})]
    _, problems = validate_outputs(declared, {"accuracy": 1.5})
    assert [p.rule for p in problems] == ["output_type"]


def test_untyped_output_passes_any_value() -> None:
    typed, problems = validate_outputs([_io(name="blob")], {"blob": {"a": [1]}})
    assert problems == [] and typed == {"blob": {"a": [1]}}


def test_problems_carry_the_file(tmp_path: Path) -> None:
    _, problems = validate_outputs(DECLARED, {}, file=str(tmp_path / "outputs.json"))
    assert problems[0].file == str(tmp_path / "outputs.json")
    assert problems[0].format().startswith(str(tmp_path / "outputs.json"))


def test_read_outputs_of_a_run_that_logged_nothing(tmp_path: Path) -> None:
    assert read_outputs(tmp_path) == {}
    assert read_outputs(tmp_path / "missing-dir") == {}


@pytest.mark.parametrize(
    ("content", "match"), [("{not json", "not valid JSON"), ("[1, 2]", "must hold a JSON object")]
)
def test_read_outputs_rejects_bad_files(tmp_path: Path, content: str, match: str) -> None:
    (tmp_path / "outputs.json").write_text(content)
    with pytest.raises(OutputsError, match=match):
        read_outputs(tmp_path)
