"""The values of every discrete hp kind, in order, and the size of a search space."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from polyaxon_prefect.search import hp_values, reachable_values, sample_hp, space_size
from polyaxon_prefect.specs.matrix._hyperparams import HpParam

HP = TypeAdapter(HpParam)


def hp(kind: str, value: Any) -> Any:
    return HP.validate_python({"kind": kind, "value": value})


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        ("choice", ["relu", 3, [1, 2], None], ["relu", 3, [1, 2], None]),
        ("pchoice", [["a", 0.2], ["b", 0.8]], ["a", "b"]),
        ("range", [1, 10, 3], [1, 4, 7]),
        ("range", "0:1:0.25", [0.0, 0.25, 0.5, 0.75]),
        ("range", {"start": 10, "stop": 600, "step": 250}, [10, 260, 510]),
        ("linspace", "0.001:0.1:5", [0.001, 0.02575, 0.0505, 0.07525, 0.1]),
        ("linspace", [0, 1, 1], [0.0]),
        ("logspace", "0:3:4", [1.0, 10.0, 100.0, 1000.0]),
        ("logspace", [0, 4, 3, 2], [1.0, 4.0, 16.0]),
        ("logspace", "0.01:0.1:2", [10**0.01, 10**0.1]),
        ("geomspace", [1, 1000, 4], [1.0, 10.0, 100.0, 1000.0]),
        ("geomspace", "2:32:5", [2.0, 4.0, 8.0, 16.0, 32.0]),
        (
            "daterange",
            ["2020-02-27", "2020-03-02", 2],
            [date(2020, 2, 27), date(2020, 2, 29)],
        ),
        (
            "datetimerange",
            ["2021-01-01 00:00", "2021-01-01 00:01", 20],
            [datetime(2021, 1, 1, 0, 0, s) for s in (0, 20, 40)],
        ),
    ],
)
def test_discrete_values_in_order(kind: str, value: Any, expected: list[Any]) -> None:
    values = hp_values(hp(kind, value))
    if kind in ("linspace", "logspace", "geomspace"):
        assert values == pytest.approx(expected, rel=1e-12)
    else:
        assert values == expected
    assert len(values) == len(expected)


def test_range_excludes_stop_and_logspace_uses_exponents() -> None:
    assert 10 not in hp_values(hp("range", [0, 10, 5]))
    # start/stop of logspace are exponents: 0.01:0.1 gives 10**0.01..10**0.1, not 0.01..0.1
    values = hp_values(hp("logspace", "0.01:0.1:5"))
    assert min(values) > 1.0
    assert values[-1] == pytest.approx(1.2589254)


@pytest.mark.parametrize(
    "kind",
    ["uniform", "quniform", "loguniform", "qloguniform"],
)
def test_uniform_family_has_no_values(kind: str) -> None:
    value = [0, 1, 0.1] if kind.startswith("q") else [0, 1]
    assert hp_values(hp(kind, value)) is None
    assert reachable_values(hp(kind, value)) is None


@pytest.mark.parametrize("kind", ["normal", "qnormal", "lognormal", "qlognormal"])
def test_normal_family_has_no_values(kind: str) -> None:
    value = [0, 1, 0.1] if kind.startswith("q") else [0, 1]
    assert hp_values(hp(kind, value)) is None


def test_pchoice_zero_weight_values_are_unreachable() -> None:
    param = hp("pchoice", [["a", 0.0], ["b", 0.6], ["c", 0.4]])
    assert hp_values(param) == ["a", "b", "c"]
    assert reachable_values(param) == ["b", "c"]


def test_space_size_is_the_product_of_reachable_sizes() -> None:
    params = {
        "a": hp("choice", [1, 2, 3]),
        "b": hp("linspace", [1, 2, 5]),
        "c": hp("range", [1, 5, 1]),
        "d": hp("pchoice", [["x", 0.0], ["y", 0.5], ["z", 0.5]]),
    }
    assert space_size(params) == 3 * 5 * 4 * 2
    assert space_size({**params, "e": hp("uniform", [0, 1])}) is None
    assert space_size({}) == 1


def test_templates_cannot_be_enumerated_or_sampled() -> None:
    param = hp("choice", "{{ options }}")
    with pytest.raises(ValueError, match="is a template: render it"):
        hp_values(param)
    with pytest.raises(ValueError, match="is a template: render it before sampling"):
        sample_hp(param, np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="is a template"):
        reachable_values(hp("pchoice", "{{ weights }}"))


def test_sample_hp_returns_plain_python_values() -> None:
    rng = np.random.default_rng(3)
    assert all(type(v) is float for v in sample_hp(hp("uniform", [0, 1]), rng, 5))
    assert all(type(v) is float for v in sample_hp(hp("qnormal", [0, 1, 0.5]), rng, 5))
    assert all(type(v) is int for v in sample_hp(hp("range", [0, 10, 1]), rng, 5))
    assert all(
        type(v) is date for v in sample_hp(hp("daterange", ["2020-01-01", "2020-02-01", 1]), rng, 5)
    )
    values = sample_hp(hp("choice", [[1], {"a": 1}]), rng, 20)
    assert {str(v) for v in values} == {"[1]", "{'a': 1}"}
    assert sample_hp(hp("uniform", [0, 1]), rng, 0) == []


def test_quantised_values_are_tidy_multiples_of_q() -> None:
    rng = np.random.default_rng(11)
    values = sample_hp(hp("quniform", [0, 1, 0.1]), rng, 500)
    assert set(values) <= {round(0.1 * k, 1) for k in range(10)}
    assert 0.3 in values  # 3 * 0.1 reads 0.3, not 0.30000000000000004
    assert 1.0 not in values  # floor: the upper bound is never reached


def test_datetimerange_step_is_seconds() -> None:
    values = hp_values(hp("datetimerange", ["2021-01-01 00:00", "2021-01-01 01:00", 1800]))
    assert values[1] - values[0] == timedelta(seconds=1800)
    assert len(values) == 2
