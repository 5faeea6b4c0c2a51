"""The 16 hyper-parameter kinds: every value syntax, the rules, and numpy-equal enumeration."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from polyaxon_prefect.specs.matrix._hyperparams import (
    ChoiceSpec,
    DistSpec,
    HpChoice,
    HpDateRange,
    HpDateTimeRange,
    HpGeomSpace,
    HpLinSpace,
    HpLogSpace,
    HpLogUniform,
    HpNormal,
    HpParam,
    HpPChoice,
    HpQLogNormal,
    HpQUniform,
    HpRange,
    HpUniform,
    NormalSpec,
    PChoiceSpec,
    RangeSpec,
    SpaceSpec,
)

ADAPTER = TypeAdapter(HpParam)


def hp(kind: str, value: Any) -> Any:
    return ADAPTER.validate_python({"kind": kind, "value": value})


def error_of(kind: str, value: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as info:
        hp(kind, value)
    errors = info.value.errors()
    assert len(errors) == 1, errors
    return errors[0]


# -- every accepted syntax gives the same normalised spec ---------------------------------------

SYNTAXES = [
    ("range", "1:10:2", RangeSpec(1, 10, 2)),
    ("range", [1, 10, 2], RangeSpec(1, 10, 2)),
    ("range", {"start": 1, "stop": 10, "step": 2}, RangeSpec(1, 10, 2)),
    ("range", " 0.5 : 2 : 0.5 ", RangeSpec(0.5, 2, 0.5)),
    ("range", (-5, 0, 1), RangeSpec(-5, 0, 1)),
    ("linspace", "0.001:0.1:5", SpaceSpec(0.001, 0.1, 5)),
    ("linspace", [0.001, 0.1, 5], SpaceSpec(0.001, 0.1, 5)),
    ("linspace", {"start": 0.001, "stop": 0.1, "num": 5}, SpaceSpec(0.001, 0.1, 5)),
    ("logspace", "1:3:3", SpaceSpec(1, 3, 3)),
    ("logspace", "1:3:3:2", SpaceSpec(1, 3, 3, 2)),
    ("logspace", [1, 3, 3, 2], SpaceSpec(1, 3, 3, 2)),
    ("logspace", {"start": 1, "stop": 3, "num": 3, "base": 2}, SpaceSpec(1, 3, 3, 2)),
    ("logspace", {"start": 1, "stop": 3, "num": 3}, SpaceSpec(1, 3, 3)),
    ("geomspace", "1:1000:4", SpaceSpec(1, 1000, 4)),
    ("geomspace", [1, 1000, 4], SpaceSpec(1, 1000, 4)),
    ("geomspace", {"start": -1000, "stop": -1, "num": 4}, SpaceSpec(-1000, -1, 4)),
    (
        "daterange",
        ["2019-06-22", "2019-06-25", 1],
        RangeSpec(date(2019, 6, 22), date(2019, 6, 25), 1),
    ),
    (
        "daterange",
        {"start": date(2019, 6, 22), "stop": "2019-06-28 00:00", "step": 2},
        RangeSpec(date(2019, 6, 22), date(2019, 6, 28), 2),
    ),
    (
        "datetimerange",
        ["2019-06-22 21:00", "2019-06-23 00:00", 3600],
        RangeSpec(datetime(2019, 6, 22, 21), datetime(2019, 6, 23), timedelta(hours=1)),
    ),
    (
        "datetimerange",
        {"start": "2019-06-24T21:20:07+02:00", "stop": "2019-06-25T21:20:07+02:00", "step": 3600},
        RangeSpec(
            datetime(2019, 6, 24, 21, 20, 7, tzinfo=timezone(timedelta(hours=2))),
            datetime(2019, 6, 25, 21, 20, 7, tzinfo=timezone(timedelta(hours=2))),
            timedelta(hours=1),
        ),
    ),
    ("uniform", "0:1", DistSpec(0, 1)),
    ("uniform", [0, 1], DistSpec(0, 1)),
    ("uniform", {"low": 0, "high": 1}, DistSpec(0, 1)),
    ("uniform", {"low": 0, "high": 1, "size": 3}, DistSpec(0, 1, size=3)),
    ("uniform", [0, 1, 3], DistSpec(0, 1, size=3)),
    ("quniform", "0:1:0.1", DistSpec(0, 1, 0.1)),
    ("quniform", [0, 1, 0.1], DistSpec(0, 1, 0.1)),
    ("quniform", {"low": 0, "high": 1, "q": 0.1}, DistSpec(0, 1, 0.1)),
    ("quniform", [0, 1, 0.1, 2], DistSpec(0, 1, 0.1, 2)),
    ("loguniform", "-7:0", DistSpec(-7, 0)),
    ("loguniform", [-7, 0], DistSpec(-7, 0)),
    ("loguniform", {"low": -7, "high": 0}, DistSpec(-7, 0)),
    ("qloguniform", [0, 0.8, 0.1], DistSpec(0, 0.8, 0.1)),
    ("qloguniform", "0:0.8:0.1", DistSpec(0, 0.8, 0.1)),
    ("qloguniform", {"low": 0, "high": 0.8, "q": 0.1}, DistSpec(0, 0.8, 0.1)),
    ("normal", "0:1", NormalSpec(0, 1)),
    ("normal", [0, 0.9], NormalSpec(0, 0.9)),
    ("normal", {"loc": 0, "scale": 1, "size": 2}, NormalSpec(0, 1, size=2)),
    ("qnormal", "0:1:0.1", NormalSpec(0, 1, 0.1)),
    ("qnormal", [0, 1, 0.1], NormalSpec(0, 1, 0.1)),
    ("qnormal", {"loc": 0, "scale": 1, "q": 0.1}, NormalSpec(0, 1, 0.1)),
    ("lognormal", [0, 1], NormalSpec(0, 1)),
    ("lognormal", "0:1", NormalSpec(0, 1)),
    ("lognormal", {"loc": 0, "scale": 1}, NormalSpec(0, 1)),
    ("qlognormal", [0, 1, 0.5], NormalSpec(0, 1, 0.5)),
    ("qlognormal", "0:1:0.5", NormalSpec(0, 1, 0.5)),
    ("qlognormal", {"loc": 0, "scale": 1, "q": 0.5}, NormalSpec(0, 1, 0.5)),
    ("choice", [1, "a", None, [1, 2]], ChoiceSpec((1, "a", None, [1, 2]))),
    ("pchoice", [["a", 0.25], ["b", 0.75]], PChoiceSpec(("a", "b"), (0.25, 0.75))),
    (
        "pchoice",
        [("a", 0.1), ("b", 0.2), ("c", 0.7)],
        PChoiceSpec(("a", "b", "c"), (0.1, 0.2, 0.7)),
    ),
]


@pytest.mark.parametrize(("kind", "value", "expected"), SYNTAXES)
def test_every_syntax_normalises(kind: str, value: Any, expected: Any) -> None:
    param = hp(kind, value)
    assert param.kind == kind
    assert param.spec == expected


@pytest.mark.parametrize(("kind", "value", "expected"), SYNTAXES)
def test_value_round_trips_as_written(kind: str, value: Any, expected: Any) -> None:
    param = hp(kind, value)
    written = list(value) if isinstance(value, tuple) else value
    assert param.value == written
    dumped = param.model_dump(by_alias=True)
    assert dumped == {"kind": kind, "value": written}
    assert hp(kind, dumped["value"]).spec == expected


def test_colon_string_keeps_ints_and_floats_apart() -> None:
    spec = hp("range", "10:600:50").spec
    assert (type(spec.start), type(spec.step)) == (int, int)
    assert isinstance(hp("range", "1e-3:1:0.5").spec.start, float)


@pytest.mark.parametrize(
    "kind", ["choice", "pchoice", "range", "linspace", "uniform", "qnormal", "daterange"]
)
def test_template_value_is_kept_and_has_no_spec(kind: str) -> None:
    param = hp(kind, "{{ values_from_upstream }}")
    assert param.is_ref
    assert param.spec is None
    assert param.length is None
    if param.is_discrete:
        with pytest.raises(ValueError, match="is a template: render it"):
            param.to_values()


# -- rules and messages --------------------------------------------------------------------------

BAD = [
    ("range", "1:10:0", "hp_range_step", "step must not be 0"),
    ("range", [10, 1, 1], "hp_order", "stop must be greater than start, got start 10 and stop 1"),
    ("range", [1, 1, 1], "hp_order", "stop must be greater than start"),
    ("range", [1, 10, -1], "hp_range_empty", "from 1 to 10 with step -1 is empty"),
    ("range", [1, 10], "hp_value_shape", r"expects 3 values \(start, stop, step\), got 2"),
    ("range", [1, 10, 2, 4], "hp_value_shape", "expects 3 values"),
    ("range", {"start": 1, "stop": 3}, "hp_missing_key", "`range` needs step"),
    ("range", {"start": 1, "stop": 3, "step": 1, "num": 2}, "hp_unknown_key", "key.s. num"),
    ("range", "a:10:1", "hp_number", "start must be a number, got 'a'"),
    ("range", [True, 10, 1], "hp_number", "start must be a number, got True"),
    ("range", 5, "hp_value_shape", "`range` expects"),
    ("linspace", [1, 0, 5], "hp_order", "stop must be greater than start"),
    ("linspace", [0, 1, 0], "hp_integer", "num must be an integer >= 1, got 0"),
    ("linspace", [0, 1, 2.5], "hp_integer", "num must be an integer >= 1, got 2.5"),
    ("logspace", [0, 1, 5, 0], "hp_positive", "base must be > 0, got 0"),
    ("logspace", "0:1:5:2:1", "hp_value_shape", "expects 3 to 4 values"),
    ("geomspace", [0, 10, 3], "hp_geomspace_sign", "non-zero with the same sign"),
    ("geomspace", [-1, 10, 3], "hp_geomspace_sign", "got start -1 and stop 10"),
    ("daterange", "2019-01-01:2019-02-01:1", "hp_value_shape", "no 'a:b:c' string form"),
    ("daterange", ["2019-01-05", "2019-01-01", 1], "hp_order", "stop must be greater"),
    ("daterange", ["2019-01-01", "2019-01-05", 0], "hp_integer", "step must be an integer >= 1"),
    ("daterange", ["someday", "2019-01-05", 1], "hp_date", "start must be a date"),
    ("datetimerange", ["2019-01-01 00:00", "2019-01-02 00:00", 0], "hp_positive", "step"),
    (
        "datetimerange",
        ["2019-01-01T00:00:00+00:00", "2019-01-02 00:00", 60],
        "hp_date",
        "both have a timezone or both have none",
    ),
    ("uniform", [1, 0], "hp_order", "high must be greater than low, got low 1 and high 0"),
    ("uniform", [0, 0], "hp_order", "high must be greater than low"),
    ("uniform", [0, 1, 0.1], "hp_integer", "size must be an integer"),
    ("loguniform", [0, -1], "hp_order", "high must be greater than low"),
    ("quniform", [0, 1, 0], "hp_positive", "q must be > 0, got 0"),
    ("quniform", [0, 1, -0.1], "hp_positive", "q must be > 0"),
    ("quniform", [0, 1], "hp_value_shape", "expects 3 to 4 values"),
    ("qloguniform", {"low": 0, "high": 1}, "hp_missing_key", "needs q"),
    ("normal", [0, 0], "hp_positive", "scale must be > 0, got 0"),
    ("lognormal", [0, -1], "hp_positive", "scale must be > 0"),
    ("qnormal", [0, 1, 0], "hp_positive", "q must be > 0"),
    ("qlognormal", "0:1", "hp_value_shape", "expects 3 to 4 values"),
    ("normal", "0:1:2:3", "hp_value_shape", "expects 2 to 3 values"),
    ("choice", [], "hp_empty", "at least one value"),
    ("choice", "relu", "hp_value_shape", "expects a list of values, got 'relu'"),
    ("choice", {"a": 1}, "hp_value_shape", "expects a list of values"),
    ("pchoice", [], "hp_empty", "at least one value"),
    ("pchoice", ["a", "b"], "hp_value_shape", r"item 0 must be a \[value, probability\] pair"),
    ("pchoice", [["a", 0.5, 1]], "hp_value_shape", "item 0 must be a"),
    ("pchoice", [["a", 1]], "hp_pchoice_probability", r"float in \[0, 1\), got 1$"),
    ("pchoice", [["a", 1.0]], "hp_pchoice_probability", "got 1.0"),
    ("pchoice", [["a", 0.5], ["b", 1]], "hp_pchoice_probability", "probability of 'b'"),
    ("pchoice", [["a", -0.1], ["b", 0.9]], "hp_pchoice_probability", "got -0.1"),
    ("pchoice", [["a", "0.5"], ["b", 0.5]], "hp_pchoice_probability", "got '0.5'"),
]


@pytest.mark.parametrize(("kind", "value", "rule", "message"), BAD)
def test_invalid_values_are_refused_on_the_value_field(
    kind: str, value: Any, rule: str, message: str
) -> None:
    error = error_of(kind, value)
    assert error["type"] == rule
    assert error["loc"] == (kind, "value")
    assert error["msg"].startswith(f"`{kind}`")
    assert re.search(message, error["msg"]), error["msg"]


def test_pchoice_under_one_gives_the_rest_to_the_last_value_as_polyaxon_does() -> None:
    # Polyaxon samples with numpy's multinomial, which ignores the last probability: the
    # docs' [[relu, 0.1], [sigmoid, 0.8]] draws sigmoid 90 % of the time
    spec = hp("pchoice", [["relu", 0.1], ["sigmoid", 0.8]]).spec
    assert spec.values == ("relu", "sigmoid")
    assert spec.probabilities == (0.1, 0.9)
    assert spec.written_sum == pytest.approx(0.9)
    three = hp("pchoice", [["a", 0.2], ["b", 0.3], ["c", 0.0]]).spec
    assert three.probabilities == (0.2, 0.3, 0.5)


def test_pchoice_over_one_stays_an_error() -> None:
    over = error_of("pchoice", [["a", 0.6], ["b", 0.6]])
    assert over["type"] == "hp_pchoice_sum"
    assert over["msg"] == "`pchoice` probabilities must sum to at most 1, got 1.2 (0.6 + 0.6)"


def test_pchoice_sum_tolerates_float_rounding_only() -> None:
    thirds = [["a", 0.1], ["b", 0.2], ["c", 0.7]]  # 0.1 + 0.2 != 0.3 in binary floats
    assert hp("pchoice", thirds).spec.probabilities == (0.1, 0.2, 0.7)
    assert hp("pchoice", [["a", 1 / 3], ["b", 1 / 3], ["c", 1 / 3]]).length == 3
    error_of("pchoice", [["a", 0.5], ["b", 0.5 + 1e-6]])


def test_uniform_third_value_is_a_size_and_the_hint_points_to_quniform() -> None:
    error = error_of("uniform", [0, 1, 0.1])
    assert "quniform" in error["ctx"]["hint"]


def test_wrong_kind_is_refused_by_the_discriminator() -> None:
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        hp("choise", [1, 2])


def test_value_is_required() -> None:
    with pytest.raises(ValidationError, match="Field required"):
        ADAPTER.validate_python({"kind": "choice"})


def test_kind_defaults_when_built_in_python() -> None:
    assert HpRange(value=[1, 3, 1]).to_values() == [1, 2]
    assert HpChoice(value=["a"]).kind == "choice"


# -- enumeration matches numpy -------------------------------------------------------------------

NUMPY_CASES = [
    ("range", "1:10:3", lambda: np.arange(1, 10, 3)),
    ("range", [1, 10, 3.0], lambda: np.arange(1.0, 10.0, 3.0)),
    ("range", [-5, 0, 1], lambda: np.arange(-5, 0, 1)),
    ("range", "10:600:50", lambda: np.arange(10, 600, 50)),
    ("range", [0, 1, 0.1], lambda: np.arange(0, 1, 0.1)),
    ("range", [0.001, 0.1, 0.007], lambda: np.arange(0.001, 0.1, 0.007)),
    ("linspace", "0.001:0.1:5", lambda: np.linspace(0.001, 0.1, 5)),
    ("linspace", [1, 2, 1], lambda: np.linspace(1, 2, 1)),
    ("linspace", [-3, 7, 11], lambda: np.linspace(-3, 7, 11)),
    ("logspace", "0.01:0.1:5", lambda: np.logspace(0.01, 0.1, 5)),
    ("logspace", [-5, -1, 5], lambda: np.logspace(-5, -1, 5)),
    ("logspace", [1, 10, 10, 2], lambda: np.logspace(1, 10, 10, base=2)),
    ("geomspace", [1, 1000, 4], lambda: np.geomspace(1, 1000, 4)),
    ("geomspace", [0.001, 0.1, 7], lambda: np.geomspace(0.001, 0.1, 7)),
    ("geomspace", [-1000, -1, 4], lambda: np.geomspace(-1000, -1, 4)),
]


@pytest.mark.parametrize(("kind", "value", "expected"), NUMPY_CASES)
def test_to_values_equals_numpy(kind: str, value: Any, expected: Any) -> None:
    param = hp(kind, value)
    values = param.to_values()
    reference = expected().tolist()
    assert values == pytest.approx(reference, rel=1e-12, abs=1e-15)
    assert [type(v) for v in values] == [type(v) for v in reference]
    assert param.length == len(reference)


def test_range_excludes_stop_and_linspace_includes_it() -> None:
    assert hp("range", [1, 4, 1]).to_values() == [1, 2, 3]
    assert hp("linspace", [1, 4, 4]).to_values() == [1.0, 2.0, 3.0, 4.0]


def test_logspace_bounds_are_exponents() -> None:
    values = hp("logspace", "0.01:0.1:5").to_values()
    assert values[0] == pytest.approx(10**0.01)
    assert values[-1] == pytest.approx(10**0.1)


def test_date_ranges_enumerate_with_stop_excluded() -> None:
    days = hp("daterange", ["2019-06-22", "2019-06-27", 2]).to_values()
    assert days == [date(2019, 6, 22), date(2019, 6, 24), date(2019, 6, 26)]
    numpy_days = np.arange(
        np.datetime64("2019-06-22"), np.datetime64("2019-06-27"), np.timedelta64(2, "D")
    )
    assert days == numpy_days.astype(object).tolist()
    times = hp("datetimerange", ["2019-06-22 21:00", "2019-06-22 23:00", 3600]).to_values()
    assert times == [datetime(2019, 6, 22, 21), datetime(2019, 6, 22, 22)]


def test_choice_and_pchoice_enumerate_their_values() -> None:
    assert hp("choice", [3, "a", 1.5]).to_values() == [3, "a", 1.5]
    assert hp("pchoice", [["x", 0.3], ["y", 0.7]]).to_values() == ["x", "y"]


@pytest.mark.parametrize(
    ("kind", "value"),
    [("uniform", [0, 1]), ("qloguniform", [0, 1, 0.1]), ("normal", [0, 1])],
)
def test_continuous_kinds_cannot_be_enumerated(kind: str, value: Any) -> None:
    param = hp(kind, value)
    assert param.length is None
    with pytest.raises(ValueError, match="continuous distribution: it has no finite list"):
        param.to_values()


# -- flags and IO ------------------------------------------------------------------------------

FLAGS = {
    # kind: (is_distribution, is_continuous, is_range)
    "choice": (False, False, False),
    "pchoice": (True, False, False),
    "range": (False, False, True),
    "linspace": (False, False, True),
    "logspace": (False, False, True),
    "geomspace": (False, False, True),
    "daterange": (False, False, True),
    "datetimerange": (False, False, True),
    "uniform": (True, True, False),
    "quniform": (True, True, False),
    "loguniform": (True, True, False),
    "qloguniform": (True, True, False),
    "normal": (True, True, False),
    "qnormal": (True, True, False),
    "lognormal": (True, True, False),
    "qlognormal": (True, True, False),
}

SAMPLE_VALUES = {
    "choice": [1, 2],
    "pchoice": [[1, 0.5], [2, 0.5]],
    "range": [0, 3, 1],
    "linspace": [0, 1, 3],
    "logspace": [0, 1, 3],
    "geomspace": [1, 10, 2],
    "daterange": ["2019-01-01", "2019-01-03", 1],
    "datetimerange": ["2019-01-01 00:00", "2019-01-01 02:00", 3600],
    "uniform": [0, 1],
    "quniform": [0, 1, 0.5],
    "loguniform": [0, 1],
    "qloguniform": [0, 1, 0.5],
    "normal": [0, 1],
    "qnormal": [0, 1, 0.5],
    "lognormal": [0, 1],
    "qlognormal": [0, 1, 0.5],
}


@pytest.mark.parametrize("kind", sorted(FLAGS))
def test_flags_per_kind(kind: str) -> None:
    param = hp(kind, SAMPLE_VALUES[kind])
    distribution, continuous, is_range = FLAGS[kind]
    assert param.is_distribution is distribution
    assert param.is_continuous is continuous
    assert param.is_discrete is not continuous
    assert param.is_range is is_range
    assert param.is_uniform is (kind == "uniform")
    assert param.is_categorical is False
    assert (param.length is None) is continuous


def test_is_categorical_only_for_non_numeric_choice() -> None:
    assert hp("choice", ["relu", "tanh"]).is_categorical
    assert hp("choice", [1, "a"]).is_categorical
    assert not hp("choice", [0.25, 0.3, 1]).is_categorical
    assert not hp("choice", [True, False]).is_categorical  # bools count as numbers (Polyaxon)
    assert not hp("pchoice", [["relu", 0.5], ["tanh", 0.5]]).is_categorical


@pytest.mark.parametrize(
    ("param", "io_type", "ok"),
    [
        (HpRange(value=[1, 3, 1]), "int", True),
        (HpRange(value=[1, 3, 1]), "float", True),
        (HpRange(value=[1, 3, 1]), "str", False),
        (HpLinSpace(value=[1, 3, 3]), "bool", False),
        (HpUniform(value=[0, 1]), "float", True),
        (HpQUniform(value=[0, 1, 0.5]), "date", False),
        (HpChoice(value=["a"]), "str", True),
        (HpChoice(value=["a"]), "dict", True),
        (HpPChoice(value=[["a", 0.5], ["b", 0.5]]), "str", True),
        (HpDateRange(value=["2019-01-01", "2019-01-03", 1]), "date", True),
        (HpDateRange(value=["2019-01-01", "2019-01-03", 1]), "datetime", False),
        (HpDateRange(value=["2019-01-01", "2019-01-03", 1]), "int", False),
        (HpDateTimeRange(value=["2019-01-01", "2019-01-03", 60]), "datetime", True),
        (HpDateTimeRange(value=["2019-01-01", "2019-01-03", 60]), "date", False),
        (HpGeomSpace(value=[1, 10, 2]), None, True),
    ],
)
def test_validate_io(param: Any, io_type: str | None, ok: bool) -> None:
    message = param.validate_io(io_type, name="lr")
    assert (message is None) is ok
    if not ok:
        assert message.startswith(f"param `lr` is a `{param.kind}` hyperparameter")
        assert f"its input has type `{io_type}`" in message


def test_classes_are_frozen_and_spec_is_consistent() -> None:
    param = HpLogSpace(value={"start": 0, "stop": 2, "num": 3, "base": 2})
    with pytest.raises(ValidationError):
        param.value = [1, 2, 3]  # type: ignore[misc]
    assert param.to_values() == [1.0, 2.0, 4.0]
    assert HpLogUniform(value=[-3, 0]).spec == DistSpec(-3, 0)
    assert HpNormal(value=[0, 2]).spec.scale == 2
    assert HpQLogNormal(value=[0, 1, 1]).spec.q == 1
