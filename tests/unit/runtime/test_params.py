"""Run-time params are checked with the load-time rules (`specs.params._validate_params`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import prepare_job


def _load(tmp_path: Path, inputs: str, given: dict[str, str]) -> object:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\n"
        + textwrap.dedent(inputs)
        + "run:\n  kind: job\n  container: {command: [echo]}\n",
        encoding="utf-8",
    )
    return load_polyaxonfile(path, params=given)


def _rules(
    tmp_path: Path, inputs: str, params: dict[str, object], given: dict[str, str] | None = None
) -> list[tuple[str, tuple]]:
    loaded = _load(tmp_path, inputs, given or {})
    with pytest.raises(PolyaxonfileError) as info:
        prepare_job(loaded, params=params, connections={})  # type: ignore[arg-type]
    return [(p.rule, p.path) for p in info.value.problems]


def test_an_override_is_checked_with_the_load_time_rules(tmp_path: Path) -> None:
    inputs = "inputs:\n- {name: n, type: int, value: 1, validation: {ge: 0}}\n"
    assert _rules(tmp_path, inputs, {"n": "many"}) == [("param_type", ("params", "n", "value"))]
    assert _rules(tmp_path, inputs, {"n": -1}) == [("param_validation", ("params", "n", "value"))]
    required = "inputs:\n- {name: n, type: int}\n"
    assert _rules(tmp_path, required, {"n": None}, {"n": "1"}) == [
        ("param_required", ("params", "n", "value"))
    ]


def test_to_init_on_an_input_that_cannot_be_an_init_step(tmp_path: Path) -> None:
    inputs = "inputs:\n- {name: label, type: str, value: x, toInit: true}\n"
    assert _rules(tmp_path, inputs, {}) == [("param_to_init", ("params", "label", "toInit"))]
