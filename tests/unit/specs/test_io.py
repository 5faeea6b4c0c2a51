"""IO types (spec 2.2), inputs/outputs (2.1) and validation predicates."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from polyaxon_prefect.specs import IO, GitType, Validation
from polyaxon_prefect.specs.params._io import check_validation
from polyaxon_prefect.specs.params._types import (
    are_compatible,
    is_list_type,
    list_item_type,
    parse_type,
    parse_value,
)

# --------------------------------------------------------------------------- coercions

COERCIONS = [
    ("float", "0.1", 0.1),
    ("float", 1, 1.0),
    ("metric", "2.5", 2.5),
    ("int", "3", 3),
    ("int", 3, 3),
    ("bool", "true", True),
    ("bool", "True", True),
    ("bool", "yes", True),
    ("bool", "no", False),
    ("bool", 0, False),
    ("str", 12, "12"),
    ("str", 1.5, "1.5"),
    ("str", "abc", "abc"),
    ("dict", '{"a": 1}', {"a": 1}),
    ("metadata", {"a": 1}, {"a": 1}),
    ("list", "[1, 2]", [1, 2]),
    ("list", (1, 2), [1, 2]),
    ("List[int]", "[1, 2]", [1, 2]),
    ("list[float]", [1, "2.5"], [1.0, 2.5]),
    ("Dict[str, float]", {"a": "0.5"}, {"a": 0.5}),
    ("Optional[int]", "4", 4),
    ("Union[int, str]", "x", "x"),
    ("int | None", 7, 7),
    ("PositiveInt", 2, 2),
    ("NonNegativeFloat", 0, 0.0),
    ("StrictStr", "s", "s"),
    ("Tuple[int, str]", [1, 2], [1, "2"]),
    ("Set[int]", [1, 1, 2], [1, 2]),
    ('Literal["a", "b"]', "b", "b"),
    ("any", {"x": [1]}, {"x": [1]}),
    ("path", "/data/x", "/data/x"),
    ("s3", "s3://bucket/key", "s3://bucket/key"),
    ("gcs", "gs://bucket/blob", "gs://bucket/blob"),
    (
        "wasb",
        "wasbs://container@account.blob.core.windows.net/path",
        "wasbs://container@account.blob.core.windows.net/path",
    ),
    ("uri", "http://user:pass@host:8000/x", "http://user:pass@host:8000/x"),
    ("image", "polyaxon/polyaxon-quick-start:1.0", "polyaxon/polyaxon-quick-start:1.0"),
    ("date", "2020-01-02", dt.date(2020, 1, 2)),
    ("datetime", "2020-01-02T10:30:00", dt.datetime(2020, 1, 2, 10, 30)),
    ("datetime", dt.date(2020, 1, 2), dt.datetime(2020, 1, 2)),
    ("timedelta", 90, dt.timedelta(seconds=90)),
    ("timedelta", "01:30:00", dt.timedelta(hours=1, minutes=30)),
    ("timedelta", "P1DT2H", dt.timedelta(days=1, hours=2)),
    (
        "uuid",
        "fcc462d764104eb698d3cca509f34154",
        "fcc462d7-6410-4eb6-98d3-cca509f34154",
    ),
    ("email", "a@b.org", "a@b.org"),
    ("auth", "user:pass", "user:pass"),
    ("dict_of_dicts", {"a": {"b": 1}}, {"a": {"b": 1}}),
]


@pytest.mark.parametrize(("type_str", "value", "expected"), COERCIONS, ids=lambda x: repr(x))
def test_parse_value_coerces_like_polyaxon(type_str, value, expected):
    result = parse_value(type_str, value)
    assert result == expected
    assert type(result) is type(expected)


REJECTIONS = [
    ("int", "3.5", "expected an integer"),
    ("int", 3.5, "expected an integer"),
    ("int", True, "boolean"),
    ("float", "abc", "expected a number"),
    ("float", True, "boolean"),
    ("bool", "maybe", "expected a boolean"),
    ("bool", 2, "expected a boolean"),
    ("str", [1], "expected a string"),
    ("dict", "[1]", "expected a mapping"),
    ("list", "abc", "expected a list"),
    ("List[int]", [1, "x"], "item 1: expected an integer"),
    ("Dict[str, float]", {"a": "x"}, "at key 'a': expected a number"),
    ("PositiveInt", 0, "greater than 0"),
    ("StrictStr", 1, "exactly a str"),
    ("StrictInt", "1", "exactly a int"),
    ('Literal["a", "b"]', "c", "expected one of"),
    ("Tuple[int, str]", [1], "expected 2 items"),
    ("s3", "gs://bucket/key", "s3://bucket/key"),
    ("gcs", "s3://bucket", "gs://bucket/blob"),
    ("wasb", "https://x", "wasbs://"),
    ("uri", "not a url", "expected a URL"),
    ("image", "has space", "docker image"),
    ("date", "2020-13-45", "expected a date"),
    ("date", dt.datetime(2020, 1, 2, 10, 0), "datetime"),
    ("datetime", "yesterday", "expected a datetime"),
    ("timedelta", "soon", "expected a duration"),
    ("uuid", "123", "expected a UUID"),
    ("email", "nobody", "email"),
    ("dict_of_dicts", {"a": 1}, "mapping of mappings"),
    ("path", 3, "expected a string"),
    ("Optional[int]", "x", "matches none of"),
]


@pytest.mark.parametrize(("type_str", "value", "message"), REJECTIONS, ids=lambda x: repr(x))
def test_parse_value_rejects_with_a_plain_message(type_str, value, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_value(type_str, value)


def test_datetime_is_a_real_datetime_unlike_polyaxon():
    # Polyaxon maps `datetime` to `date`, so a full ISO datetime fails there. Not here.
    value = parse_value("datetime", "2021-03-04T05:06:07+00:00")
    assert value == dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


def test_is_list_wraps_the_type():
    assert parse_value("float", ["0.1", 2], is_list=True) == [0.1, 2.0]
    with pytest.raises(ValueError, match="expected a list"):
        parse_value("float", 0.1, is_list=True)


def test_none_passes_through_for_the_caller_to_judge():
    assert parse_value("int", None) is None


def test_object_types_validate_through_their_models():
    git = parse_value("git", {"url": "https://github.com/x/y", "revision": "main"})
    assert isinstance(git, GitType)
    assert git.url == "https://github.com/x/y"
    with pytest.raises(ValueError, match="not a valid `git` value"):
        parse_value("git", {"nope": 1})
    with pytest.raises(ValueError, match="expected a `artifacts` mapping"):
        parse_value("artifacts", 3)


# --------------------------------------------------------------------------- type strings


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("List[int]", "list[int]"),
        ("Sequence[int]", "List[int]"),
        ("typing.Dict[str, float]", "dict[str, float]"),
        ("Optional[int]", "Union[int, None]"),
        ("Optional[int]", "int | None"),
        ("Mapping[str, s3]", "Dict[str, s3]"),
    ],
)
def test_spellings_of_the_same_type_parse_equal(a, b):
    assert parse_type(a) == parse_type(b)
    assert parse_type(a).known


@pytest.mark.parametrize(
    "type_str",
    ["foo", "List[int", "List[int]]", "Dict[str]", "int[str]", "__import__('os')", "List[1]"],
)
def test_unknown_or_malformed_types_are_accepted_until_a_value_is_checked(type_str):
    spec = parse_type(type_str)
    assert not spec.known
    assert spec.error
    with pytest.raises(ValueError, match="cannot check the value against type"):
        parse_value(type_str, 1)
    # A declaration with such a type and no value is fine.
    assert IO(name="x", type=type_str).type == type_str


def test_type_parsing_never_evaluates_code():
    # Evaluated, this would exit the test run; parsed, it is just an unknown type.
    assert not parse_type("__import__('sys').exit(3)").known


def test_list_helpers():
    assert is_list_type("List[float]")
    assert is_list_type("list")
    assert not is_list_type("float")
    assert not is_list_type(None)
    assert list_item_type("List[s3]") == "s3"
    assert list_item_type("list") is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("str", "str", True),
        ("str", "path", True),
        ("s3", "gcs", True),
        ("wasb", "str", True),
        ("float", "metric", True),
        ("int", "float", False),
        ("int", "str", False),
        ("float", "str", False),
        ("List[float]", "List[metric]", True),
        ("List[float]", "List[str]", False),
        ("any", "int", True),
        (None, "int", True),
        ("git", "git", True),
    ],
)
def test_are_compatible(a, b, expected):
    assert are_compatible(a, b) is expected


# --------------------------------------------------------------------------- IO


def test_declaring_a_value_makes_the_io_optional_even_null():
    assert IO.model_validate({"name": "x", "type": "int", "value": 1}).is_optional is True
    assert IO.model_validate({"name": "x", "type": "int", "value": None}).is_optional is True
    assert IO.model_validate({"name": "x", "type": "int"}).is_optional is None


def test_not_optional_with_a_default_is_an_error():
    with pytest.raises(ValidationError, match="IO `x` is not optional and has default value `1`"):
        IO.model_validate({"name": "x", "type": "int", "value": 1, "isOptional": False})


def test_default_value_is_coerced_and_checked_at_declaration():
    assert IO.model_validate({"name": "lr", "type": "float", "value": "0.1"}).value == 0.1
    with pytest.raises(ValidationError, match="default value 'abc' of `lr` is not a `float`"):
        IO.model_validate({"name": "lr", "type": "float", "value": "abc"})
    with pytest.raises(ValidationError, match="must be greater than `1`"):
        IO.model_validate({"name": "n", "type": "int", "value": 0, "validation": {"gt": 1}})


def test_template_default_is_not_checked():
    io = IO.model_validate({"name": "n", "type": "int", "value": "{{ globals.x }}"})
    assert io.value == "{{ globals.x }}"


@pytest.mark.parametrize("name", ["globals", "params", "connections"])
def test_reserved_io_names(name):
    with pytest.raises(ValidationError, match="taken by the template context"):
        IO(name=name)


def test_io_name_must_be_a_slug():
    with pytest.raises(ValidationError, match="must be a slug"):
        IO(name="a.b")
    assert IO(name="conv1-size_2").name == "conv1-size_2"


def test_is_flag_requires_bool():
    assert IO.model_validate({"name": "f", "type": "bool", "isFlag": True}).is_flag is True
    with pytest.raises(ValidationError, match="only allowed for inputs of type `bool`"):
        IO.model_validate({"name": "f", "type": "str", "isFlag": True})


def test_full_type_folds_is_list():
    assert IO.model_validate({"name": "x", "type": "float", "isList": True}).full_type == (
        "List[float]"
    )
    assert IO.model_validate({"name": "x", "type": "List[int]"}).full_type == "List[int]"
    assert IO.model_validate({"name": "x", "type": "List[int]"}).is_list_value


def test_snake_case_keys_are_accepted():
    io = IO.model_validate({"name": "x", "type": "int", "is_optional": True, "to_env": "X"})
    assert io.is_optional is True
    assert io.to_env == "X"


def test_unknown_io_key_is_rejected():
    with pytest.raises(ValidationError, match="extra"):
        IO.model_validate({"name": "x", "default": 1})


def test_delay_defaults():
    io = IO(name="x")
    assert io.is_delayed(default=True) is True
    assert IO.model_validate({"name": "x", "delayValidation": False}).is_delayed(default=True) is (
        False
    )
    assert IO.model_validate({"name": "x", "validation": {"delay": True}}).is_delayed() is True


def test_deprecated_options_fold_into_validation():
    io = IO.model_validate({"name": "x", "type": "str", "options": ["a", "b"]})
    with pytest.raises(ValueError, match="must be one of"):
        io.validate_value("c")
    assert io.validate_value("a") == "a"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("rules", "value", "broken"),
    [
        ({"gt": 1}, 1, "greater than `1`"),
        ({"ge": 1}, 0, "greater than or equal to `1`"),
        ({"lt": 1}, 1, "less than `1`"),
        ({"le": 1}, 2, "less than or equal to `1`"),
        ({"multipleOf": 3}, 4, "multiple of `3`"),
        ({"minDigits": 3}, 12, "at least `3` digits"),
        ({"maxDigits": 2}, 1.25, "at most `2` digits"),
        ({"decimalPlaces": 1}, 1.25, "at most `1` decimal places"),
        ({"regex": "^s3://"}, "gs://x", "must match the regex"),
        ({"minLength": 3}, "ab", "at least `3` characters"),
        ({"maxLength": 1}, "ab", "at most `1` characters"),
        ({"contains": "x"}, "abc", "must contain `x`"),
        ({"excludes": "b"}, "abc", "must not contain `b`"),
        ({"options": ["a", "b"]}, "c", "must be one of"),
        ({"minItems": 2}, [1], "at least `2` items"),
        ({"maxItems": 1}, {"a": 1, "b": 2}, "at most `1` items"),
        ({"keys": ["a"]}, {"a": 1, "b": 2}, "exactly the keys"),
        ({"containsKeys": ["c"]}, {"a": 1}, "must contain the keys"),
        ({"excludesKeys": ["a"]}, {"a": 1}, "must not contain any of the keys"),
    ],
)
def test_validation_predicates(rules, value, broken):
    validation = Validation.model_validate(rules)
    errors = check_validation(validation, value)
    assert len(errors) == 1
    assert broken in errors[0]


def test_scalar_predicates_apply_element_wise():
    validation = Validation.model_validate({"gt": 0, "lt": 10})
    assert check_validation(validation, [1, 5, 9]) == []
    assert len(check_validation(validation, [1, 50, -1])) == 2
    assert len(check_validation(validation, {"a": 5, "b": 11})) == 1


def test_validation_passes_none_and_skips_template_constraints():
    assert check_validation(Validation(gt=3), None) == []
    assert check_validation(Validation.model_validate({"gt": "{{ low }}"}), 1) == []


def test_validation_that_does_not_apply_is_reported_not_raised():
    errors = check_validation(Validation(gt=3), "abc")
    assert errors and "cannot be checked with `gt: 3`" in errors[0]


def test_bad_regex_is_rejected_at_declaration():
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        Validation(regex="(")
