"""Params (spec 3.1), their short form, the ref grammar and validation against IO (3.3)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from polyaxon_prefect.specs import (
    Component,
    Join,
    Param,
    normalize_params,
    typed_params,
    validate_params,
)
from polyaxon_prefect.specs.matrix._matrix import Mapping, RandomSearch

JOB = {"kind": "job", "container": {"image": "busybox"}}


def _component(inputs=None, outputs=None) -> Component:
    return Component.model_validate({"run": JOB, "inputs": inputs, "outputs": outputs})


def _params(raw) -> dict[str, Param]:
    return {k: Param.model_validate(v) for k, v in normalize_params(raw).items()}


# --------------------------------------------------------------------------- short form


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0.1, {"value": 0.1}),
        ("sgd", {"value": "sgd"}),
        ([1, 2], {"value": [1, 2]}),
        ({"value": 1}, {"value": 1}),
        ({}, {}),
        ({"ref": "ops.a", "value": "outputs.x"}, {"ref": "ops.a", "value": "outputs.x"}),
        ({"to_env": "X"}, {"to_env": "X"}),
        ({"contextOnly": True, "value": 1}, {"contextOnly": True, "value": 1}),
        ({"a": 1, "b": 2}, {"value": {"a": 1, "b": 2}}),
        (None, {"value": None}),
    ],
)
def test_normalize_params(raw, expected):
    assert normalize_params({"p": raw}) == {"p": expected}


def test_normalize_leaves_non_mappings_for_pydantic():
    assert normalize_params(None) is None
    assert normalize_params([1]) == [1]


def test_full_form_dict_with_unknown_keys_is_an_error():
    # `connection` makes it full form, so `name` is an unknown key (as in Polyaxon).
    with pytest.raises(ValidationError, match="extra"):
        Param.model_validate({"name": "x", "connection": "c"})


# --------------------------------------------------------------------------- refs


@pytest.mark.parametrize(
    ("ref", "value"),
    [
        ("ops.train", "outputs.loss"),
        ("ops.train", "{{ outputs.loss }}"),
        ("ops.train", "outputs"),
        ("ops.train", "io"),
        ("ops.train", "artifacts"),
        ("ops.train", "artifacts.tensorboard"),
        ("ops.train", "artifacts.tensorboard.path"),
        ("ops.train", "globals.uuid"),
        ("ops.train", "inputs.lr"),
        ("dag", "inputs.max_loss"),
        ("dag", "inputs"),
        ("runs.fcc462d764104eb698d3cca509f34154", "outputs.loss"),
    ],
)
def test_valid_refs(ref, value):
    param = Param(ref=ref, value=value)
    assert param.is_ref


@pytest.mark.parametrize(
    ("ref", "value", "where", "message"),
    [
        ("op.train", "outputs.x", "ref", "`ops.<op name>`, `runs.<uuid>` or `dag`"),
        ("ops.", "outputs.x", "ref", "`ops.<op name>`, `runs.<uuid>` or `dag`"),
        ("ops.a b", "outputs.x", "ref", "not a valid op name"),
        ("runs.123", "outputs.x", "ref", "not a valid UUID"),
        ("ops.a", 3, "value", "must be a string path"),
        ("ops.a", "foo", "value", "must be one of inputs, outputs, io, artifacts"),
        ("dag", "outputs", "value", "`outputs` of the current dag cannot be referenced"),
        ("ops.a", "params.x", "value", "must start with one of inputs, outputs"),
        ("ops.a", "outputs.x.y", "value", "only `artifacts.<name>.<path>`"),
        ("ops.a", "artifacts.a.b.c", "value", "more than 3 parts"),
        ("ops.a", "outputs..x", "value", "not a dotted path"),
    ],
)
def test_invalid_refs(ref, value, where, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")) as info:
        Param(ref=ref, value=value)
    assert info.value.errors()[0]["loc"] == (where,)


def test_ref_helpers():
    param = Param(ref="ops.train", value="{{ outputs.loss }}")
    assert param.ref_op == "train"
    assert param.entity_ref == "train"
    assert param.entity_kind == "ops"
    assert param.ref_path == ("outputs", "loss")
    assert param.entity_type == "outputs"
    assert param.searchable_ref == "ops.train.outputs.loss"
    dag = Param(ref="dag", value="inputs.x")
    assert dag.ref_op is None
    assert dag.entity_ref is None
    assert dag.searchable_ref == "dag.inputs.x"
    literal = Param(value=1)
    assert literal.is_literal
    assert literal.ref_path is None
    assert literal.searchable_ref is None
    assert Param(value="{{ x }}").is_template


# --------------------------------------------------------------------------- validate_params


def _rules(problems):
    return [(p.rule, p.path) for p in problems]


def test_missing_required_input_has_a_hint():
    component = _component(inputs=[{"name": "epochs", "type": "int"}])
    (problem,) = validate_params(component, {})
    assert problem.message == "Input `epochs` is required, no param was passed"
    assert problem.rule == "param_missing"
    assert "-P epochs=..." in problem.hint


def test_optional_delayed_and_template_inputs_need_no_param():
    component = _component(
        inputs=[
            {"name": "a", "type": "int", "value": 1},
            {"name": "b", "type": "int", "isOptional": True},
            {"name": "c", "type": "int", "delayValidation": True},
        ],
        outputs=[{"name": "loss", "type": "float"}],
    )
    assert validate_params(component, {}) == []
    required = _component(inputs=[{"name": "x", "type": "int"}])
    assert validate_params(required, {}, is_template=True) == []


def test_required_output_only_when_validation_is_not_delayed():
    component = _component(outputs=[{"name": "loss", "type": "float", "delayValidation": False}])
    (problem,) = validate_params(component, {})
    assert problem.message.startswith("Output `loss` is required")


def test_unexpected_params():
    component = _component(inputs=[{"name": "lr", "type": "float"}])
    problems = validate_params(
        component, _params({"lr": 0.1, "extra": 1, "ctx": {"value": 1, "contextOnly": True}})
    )
    assert _rules(problems) == [("param_unexpected", ("params", "extra"))]
    assert "declared inputs/outputs: `lr`" in problems[0].hint


def test_params_for_a_component_without_io():
    problems = validate_params(_component(), _params({"x": 1}))
    assert _rules(problems) == [("param_unexpected", ("params", "x"))]


def test_literal_type_errors_point_at_the_value():
    component = _component(
        inputs=[
            {"name": "n", "type": "int"},
            {"name": "lr", "type": "float"},
            {"name": "flags", "type": "str", "isList": True},
        ]
    )
    problems = validate_params(component, _params({"n": "3.5", "lr": "0.1", "flags": "[1, 2]"}))
    assert _rules(problems) == [("param_type", ("params", "n", "value"))]
    assert "could not parse value `'3.5'` for `n`" in problems[0].message


def test_literal_validation_and_null():
    component = _component(
        inputs=[
            {"name": "n", "type": "int", "validation": {"ge": 1}},
            {"name": "m", "type": "int"},
            {"name": "k", "type": "int", "value": 3},
        ]
    )
    problems = validate_params(component, _params({"n": 0, "m": None, "k": None}))
    assert _rules(problems) == [
        ("param_validation", ("params", "n", "value")),
        ("param_required", ("params", "m", "value")),
    ]


def test_template_values_are_not_type_checked():
    component = _component(inputs=[{"name": "n", "type": "int"}])
    assert validate_params(component, _params({"n": "{{ top }}"})) == []


def test_unknown_type_errors_only_with_a_value():
    component = _component(inputs=[{"name": "n", "type": "tensor", "isOptional": True}])
    assert validate_params(component, {}) == []
    (problem,) = validate_params(component, _params({"n": 1}))
    assert "cannot check the value against type `tensor`" in problem.message


def test_matrix_provides_inputs_and_checks_hp_kinds():
    component = _component(
        inputs=[
            {"name": "lr", "type": "float"},
            {"name": "act", "type": "str"},
            {"name": "epochs", "type": "int"},
        ]
    )
    matrix = RandomSearch.model_validate(
        {
            "kind": "random",
            "numRuns": 2,
            "params": {
                "lr": {"kind": "linspace", "value": "0.001:0.1:5"},
                "act": {"kind": "linspace", "value": "0.001:0.1:5"},
            },
        }
    )
    problems = validate_params(component, _params({"epochs": 5}), matrix=matrix)
    assert _rules(problems) == [("matrix_param_type", ("matrix", "params", "act"))]


def test_mapping_provides_keys_and_checks_values():
    component = _component(inputs=[{"name": "lr", "type": "float"}, {"name": "n", "type": "int"}])
    matrix = Mapping.model_validate(
        {"kind": "mapping", "values": [{"lr": 0.1, "n": 1}, {"lr": "x", "n": 2}]}
    )
    problems = validate_params(component, {}, matrix=matrix)
    assert _rules(problems) == [("matrix_param_type", ("matrix", "values", 1, "lr"))]
    only_lr = Mapping.model_validate({"kind": "mapping", "values": [{"lr": 0.1}]})
    assert _rules(validate_params(component, {}, matrix=only_lr)) == [
        ("param_missing", ("params",))
    ]


DAG_CONTEXT = {
    "ops.train.outputs": None,
    "ops.train.outputs.loss": "float",
    "ops.train.outputs.paths": "List[str]",
    "ops.train.outputs.name": "str",
    "ops.train.globals.uuid": "str",
    "dag.inputs.top": "int",
}


@pytest.mark.parametrize(
    ("io", "param", "rule"),
    [
        ({"type": "float"}, {"ref": "ops.train", "value": "outputs.loss"}, None),
        ({"type": "metric"}, {"ref": "ops.train", "value": "outputs.loss"}, None),
        ({"type": "path"}, {"ref": "ops.train", "value": "globals.uuid"}, None),
        ({"type": "int"}, {"ref": "dag", "value": "inputs.top"}, None),
        ({"type": "dict"}, {"ref": "ops.train", "value": "outputs"}, None),
        ({"type": "s3", "isList": True}, {"ref": "ops.train", "value": "outputs.paths"}, None),
        ({"type": "float"}, {"ref": "ops.train", "value": "outputs.nope"}, "ref_not_found"),
        ({"type": "int"}, {"ref": "ops.train", "value": "outputs.name"}, "ref_type"),
        ({"type": "str"}, {"ref": "ops.train", "value": "outputs.paths"}, "ref_list"),
        ({"type": "float"}, {"ref": "ops.train", "value": "artifacts.tb"}, None),
        ({"type": "float"}, {"ref": "ops.other", "value": "outputs.x"}, None),
        (
            {"type": "float"},
            {"ref": "runs.fcc462d764104eb698d3cca509f34154", "value": "outputs.x"},
            None,
        ),
    ],
)
def test_ref_checks_against_the_dag_context(io, param, rule):
    component = _component(inputs=[{"name": "x", **io}])
    problems = validate_params(component, _params({"x": param}), dag_context=DAG_CONTEXT)
    assert [p.rule for p in problems] == ([rule] if rule else [])
    if rule:
        assert problems[0].path == ("params", "x", "value")


def test_ref_not_found_lists_what_the_op_provides():
    component = _component(inputs=[{"name": "x", "type": "float"}])
    (problem,) = validate_params(
        component,
        _params({"x": {"ref": "ops.train", "value": "outputs.los"}}),
        dag_context=DAG_CONTEXT,
    )
    assert "`ops.train` has no such information" in problem.message
    assert "outputs.loss" in problem.hint


def test_refs_are_not_checked_without_a_dag_context():
    component = _component(inputs=[{"name": "x", "type": "float"}])
    params = _params({"x": {"ref": "ops.train", "value": "outputs.nope"}})
    assert validate_params(component, params) == []


def test_join_params_need_a_list_input():
    component = _component(
        inputs=[
            {"name": "losses", "type": "float", "isList": True},
            {"name": "buckets", "type": "s3"},
            {"name": "arts", "type": "artifacts"},
        ]
    )
    joins = [
        Join.model_validate(
            {
                "query": "metrics.loss: <0.1",
                "params": {
                    "losses": {"value": "outputs.loss"},
                    "buckets": {"value": "artifacts.bucket"},
                    "arts": {"value": "artifacts"},
                    "uuids": {"value": "globals.uuid", "contextOnly": True},
                    "stray": {"value": "globals.uuid"},
                },
            }
        )
    ]
    problems = validate_params(component, {}, joins=joins)
    assert _rules(problems) == [
        ("join_param_type", ("joins", 0, "params", "buckets")),
        ("param_unexpected", ("joins", 0, "params", "stray")),
    ]


# --------------------------------------------------------------------------- typed_params


def test_typed_params():
    component = _component(
        inputs=[
            {"name": "lr", "type": "float", "value": 0.01},
            {"name": "n", "type": "int"},
            {"name": "flag", "type": "bool", "isFlag": True, "value": False},
            {"name": "up", "type": "float"},
        ],
        outputs=[{"name": "loss", "type": "float"}],
    )
    params = _params(
        {
            "n": "5",
            "flag": "yes",
            "up": {"ref": "ops.a", "value": "outputs.x"},
            "note": {"value": "hi", "contextOnly": True},
        }
    )
    assert typed_params(component, params) == {
        "lr": 0.01,
        "n": 5,
        "flag": True,
        "loss": None,
        "note": "hi",
    }
    with pytest.raises(ValueError, match="param `n`"):
        typed_params(component, _params({"n": "x"}))


def test_context_only_refs_must_exist_but_have_no_type():
    params = _params(
        {
            "up": {"ref": "ops.train", "value": "outputs.loss", "contextOnly": True},
            "bad": {"ref": "ops.train", "value": "outputs.lose", "contextOnly": True},
        }
    )
    problems = validate_params(_component(), params, dag_context=DAG_CONTEXT)
    assert _rules(problems) == [("ref_not_found", ("params", "bad", "value"))]


@pytest.mark.parametrize(
    ("io", "param", "ok"),
    [
        ({"type": "git"}, {"value": {"url": "https://x"}, "toInit": True}, True),
        ({"type": "path"}, {"value": "/data", "toInit": True}, True),
        ({"type": "str"}, {"value": "x", "toInit": True, "connection": "c"}, True),
        ({"type": "str", "connection": "c"}, {"value": "x", "toInit": True}, True),
        ({"type": "str"}, {"value": "x", "toInit": True}, False),
        ({}, {"value": "x", "toInit": True}, False),
    ],
)
def test_to_init_rules(io, param, ok):
    component = _component(inputs=[{"name": "x", **io}])
    problems = validate_params(component, _params({"x": param}))
    assert _rules(problems) == ([] if ok else [("param_to_init", ("params", "x", "toInit"))])
