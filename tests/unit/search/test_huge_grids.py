"""Grids sized and enumerated lazily: a 10^7-point grid costs what a 10-point one does.

Counting multiplies the params' counts (``range``/``linspace``/``logspace`` count from their
numbers), point ``i`` is computed from ``i``, a grid past ``POLYAXON_PREFECT_MAX_GRID`` is
refused with one located line, and ``check``/``compile`` of a 10^7 grid run in a process whose
address space is capped at 3 GB.
"""

from __future__ import annotations

import itertools
import math
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.search import KINDS, SweepStudy, grid_points, matrix_plan
from polyaxon_prefect.search._kinds import _grid
from polyaxon_prefect.specs.matrix._hyperparams import HpParam
from polyaxon_prefect.specs.matrix._matrix import MAX_GRID_DEFAULT, MAX_GRID_ENV, Matrix

MATRIX = TypeAdapter(Matrix)
HP = TypeAdapter(HpParam)

TEN_MILLION = {  # 1000 * 100 * 10 * 10 points
    "a": {"kind": "range", "value": "0:1000:1"},
    "b": {"kind": "linspace", "value": {"start": 0, "stop": 1, "num": 100}},
    "c": {"kind": "choice", "value": list(range(10))},
    "d": {"kind": "logspace", "value": "0:3:10"},
}


def grid(params: dict[str, Any], **extra: Any) -> Any:
    return MATRIX.validate_python({"kind": "grid", "params": params, **extra})


@pytest.fixture
def no_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_GRID_ENV, str(10**9))


# -- counting and points by index --------------------------------------------------------


def test_a_ten_million_point_grid_is_counted_and_its_5_000_000th_point_computed(
    no_limit: None,
) -> None:
    spec = grid(TEN_MILLION)
    started = time.perf_counter()
    points = grid_points(spec)
    point = points[5_000_000]
    elapsed = time.perf_counter() - started

    assert len(points) == KINDS["grid"].total(spec) == 10**7
    columns = [spec.params[name].to_values() for name in TEN_MILLION]
    expected = next(itertools.islice(itertools.product(*columns), 5_000_000, None))
    assert point == dict(zip(TEN_MILLION, expected, strict=True))
    assert points[-1] == {"a": 999, "b": 1.0, "c": 9, "d": 1000.0}
    assert elapsed < 1.0, elapsed


def test_a_ten_million_value_axis_is_never_listed(no_limit: None) -> None:
    spec = grid({"x": {"kind": "range", "value": "0:10000000:1"}}, numRuns=9_000_000)

    points = grid_points(spec)

    assert points.size == 10**7 and len(points) == 9_000_000
    assert points[5_000_000] == {"x": 5_000_000}
    assert points[8_999_999] == {"x": 8_999_999}
    with pytest.raises(IndexError):
        points[9_000_000]
    assert list(itertools.islice(points, 3)) == [{"x": 0}, {"x": 1}, {"x": 2}]


def test_a_long_axis_gives_the_values_a_listed_one_does(monkeypatch: pytest.MonkeyPatch) -> None:
    params = {
        "r": {"kind": "range", "value": {"start": 0.1, "stop": 2.0, "step": 0.3}},
        "l": {"kind": "linspace", "value": {"start": -1, "stop": 2.5, "num": 7}},
        "d": {
            "kind": "daterange",
            "value": {"start": "2024-01-30", "stop": "2024-03-02", "step": 9},
        },
    }
    listed = list(grid_points(grid(params)))
    monkeypatch.setattr(_grid, "_LISTED_AXIS", 1)  # every axis computed from the index

    computed = grid_points(grid(params))

    assert list(computed) == listed
    assert [computed[i] for i in range(len(computed))] == listed


@pytest.mark.parametrize(
    "value",
    [
        {"kind": "range", "value": "0:10:3"},
        {"kind": "range", "value": {"start": 0.1, "stop": 1.0, "step": 0.1}},
        {"kind": "range", "value": {"start": -2, "stop": 3.5, "step": 0.7}},
        {"kind": "linspace", "value": {"start": 0.5, "stop": 3.7, "num": 37}},
        {"kind": "linspace", "value": {"start": 2, "stop": 5, "num": 1}},
        {"kind": "logspace", "value": {"start": -3, "stop": 1, "num": 21, "base": 2}},
        {"kind": "geomspace", "value": {"start": -1000, "stop": -0.01, "num": 13}},
        {"kind": "daterange", "value": {"start": "2024-02-25", "stop": "2024-03-05", "step": 2}},
        {
            "kind": "datetimerange",
            "value": {"start": "2024-01-01 00:00", "stop": "2024-01-01 01:00", "step": 700},
        },
    ],
    ids=lambda v: v["kind"],
)
def test_each_kind_counts_and_indexes_as_numpy_enumerates(value: dict[str, Any]) -> None:
    hp = HP.validate_python(value)
    values = hp.to_values()

    assert hp.length == len(values)
    for index, expected in enumerate(values):
        got = hp.value_at(index)
        if value["kind"] in ("logspace", "geomspace"):  # numpy's vectorised pow/log10
            assert math.isclose(got, expected, rel_tol=1e-14), (index, got, expected)
        else:
            assert got == expected and type(got) is type(expected), (index, got, expected)
    with pytest.raises(IndexError):
        hp.value_at(len(values))


def test_range_counts_and_values_match_numpy_on_awkward_steps() -> None:
    for start, stop, step in [(0, 1, 0.1), (0.3, 0.9, 0.2), (1, 2, 1 / 3), (-1e-9, 1e-9, 1e-10)]:
        hp = HP.validate_python({"kind": "range", "value": [start, stop, step]})
        expected = np.arange(start, stop, step).tolist()
        assert hp.length == len(expected)
        assert [hp.value_at(i) for i in range(len(expected))] == expected


def test_dates_are_counted_too() -> None:
    hp = HP.validate_python({"kind": "daterange", "value": ["2000-01-01", "2030-01-01", 1]})
    assert hp.length == (date(2030, 1, 1) - date(2000, 1, 1)).days
    assert hp.value_at(366) == date(2001, 1, 1)
    spec = {"start": "2024-01-01 00:00", "stop": "2024-02-01 00:00", "step": 1}
    hp = HP.validate_python({"kind": "datetimerange", "value": spec})
    assert hp.length == 31 * 24 * 3600
    assert hp.value_at(3600) == datetime(2024, 1, 1, 1, 0) + timedelta(0)


# -- the plan compile prints ---------------------------------------------------------------


def test_a_big_plan_is_a_count_and_the_first_points(no_limit: None) -> None:
    plan = matrix_plan(grid(TEN_MILLION))

    assert plan["total"] == 10**7
    assert "suggestions" not in plan
    assert plan["first"][:2] == [
        {"a": 0, "b": 0.0, "c": 0, "d": 1.0},
        {"a": 0, "b": 0.0, "c": 0, "d": 2.154434690031884},
    ]
    assert len(plan["first"]) == 10 and "10000000 points" in plan["note"]
    small = matrix_plan(grid({"x": {"kind": "range", "value": "0:1000:1"}}))
    assert len(small["suggestions"]) == small["total"] == 1000


# -- the limit ------------------------------------------------------------------------------


def _grid_file(tmp_path: Path, params: str, extra: str = "") -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: big\nmatrix:\n  kind: grid\n"
        f"{extra}  params:\n{params}"
        "component:\n  name: trial\n  inputs: [{name: x, type: int}, {name: y, type: int}]\n"
        "  run: {kind: job, container: {command: [python, -c, 'print(1)']}}\n",
        encoding="utf-8",
    )
    return path


_TWO_MILLION = '    x: {kind: range, value: "0:2000:1"}\n    y: {kind: range, value: "0:1000:1"}\n'


def test_a_grid_past_the_limit_is_refused_with_one_located_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MAX_GRID_ENV, raising=False)
    path = _grid_file(tmp_path, _TWO_MILLION)

    with pytest.raises(PolyaxonfileError) as caught:
        load_polyaxonfile(path, params={})

    [problem] = caught.value.problems
    assert problem.rule == "matrix_too_large"
    assert (problem.line, problem.column, problem.path) == (6, 3, ("matrix", "params"))
    line = problem.format()
    assert line.startswith(f"{path}:6:3: matrix.params: the grid has 2,000,000 trials")
    assert f"more than the limit of {MAX_GRID_DEFAULT:,} ({MAX_GRID_ENV})" in line
    assert "`random` matrix" in line and f"raise {MAX_GRID_ENV}" in line
    assert "\n" not in line


def test_the_limit_is_a_setting_and_num_runs_cuts_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_GRID_ENV, "2000000")
    assert load_polyaxonfile(_grid_file(tmp_path, _TWO_MILLION), params={})

    monkeypatch.delenv(MAX_GRID_ENV)
    assert load_polyaxonfile(_grid_file(tmp_path, _TWO_MILLION, "  numRuns: 1000\n"), params={})

    monkeypatch.setenv(MAX_GRID_ENV, "lots")
    with pytest.raises(PolyaxonfileError) as caught:
        load_polyaxonfile(_grid_file(tmp_path, _TWO_MILLION), params={})
    [problem] = caught.value.problems
    assert problem.rule == "matrix_max_grid_setting"
    assert f"{MAX_GRID_ENV} must be a positive integer, got 'lots'" in problem.message


def test_a_mapping_past_the_limit_is_refused_at_its_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_GRID_ENV, "2")
    values = [{"x": 1}, {"x": 2}, {"x": 3}]
    with pytest.raises(ValueError, match="the mapping has 3 trials, more than the limit of 2"):
        MATRIX.validate_python({"kind": "mapping", "values": values})
    monkeypatch.setenv(MAX_GRID_ENV, "3")
    assert KINDS["mapping"].total(MATRIX.validate_python({"kind": "mapping", "values": values}))


# -- a sweep opens in O(1) ------------------------------------------------------------------


def test_a_million_point_sweep_opens_at_once_and_asks_by_index() -> None:
    spec = grid(
        {"x": {"kind": "range", "value": "0:1000:1"}, "y": {"kind": "range", "value": "0:1000:1"}}
    )
    started = time.perf_counter()
    study = SweepStudy.open(spec, study_name="million", storage=":memory:")
    first = study.ask()
    second = study.ask()
    elapsed = time.perf_counter() - started

    assert study.total == 10**6
    assert first is not None and second is not None
    assert (first.index, first.params) == (0, {"x": 0, "y": 0})
    assert (second.index, second.params) == (1, {"x": 0, "y": 1})
    assert elapsed < 2.0, elapsed
    study.tell(first.number, status="failed")
    assert [r.index for r in study.history()] == [0, 1]
