"""``conditions``: rendered in the sandbox, read as a boolean, errors quote the expression."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.dag import (
    ConditionError,
    DagScope,
    OpRecord,
    evaluate_conditions,
    plan_dag,
    resolve_params,
)
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.specs import Operation

ROOT = Path(__file__).resolve().parents[3]
JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}
SCOPE = DagScope(
    inputs={"max_loss": 0.1},
    globals={"project_name": "demo", "uuid": "dag0"},
    records={
        "train": OpRecord("train", "succeeded", outputs={"loss": 0.3}, inputs={"lr": 0.01}),
        "check": OpRecord("check", "failed"),
    },
)


def _op(conditions: str | None, **params: Any) -> Operation:
    return Operation.model_validate(
        {
            "kind": "operation",
            "name": "tune",
            "conditions": conditions,
            "params": params,
            "component": {
                "kind": "component",
                "inputs": [
                    {"name": "lr", "type": "float", "value": 0.1},
                    {"name": "fast", "type": "bool", "value": False, "isFlag": True},
                ],
                "run": JOB,
            },
        }
    )


def _eval(conditions: str | None, params: dict[str, Any] | None = None) -> bool:
    op = _op(conditions)
    return evaluate_conditions(op, params or {"lr": 0.1, "fast": False}, SCOPE)


def test_no_conditions_means_run() -> None:
    assert _eval(None) is True


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{{ lr > 0.05 }}", True),
        ("{{ lr < 0.05 }}", False),
        ("{{ params.lr.value == 0.1 }}", True),
        ("{{ ops.train.outputs.loss > dag.inputs.max_loss }}", True),
        ("{{ ops.train.inputs.lr == 0.01 }}", True),
        ("{{ ops.check.status == 'failed' }}", True),
        ("{{ globals.project_name == 'demo' }}", True),
    ],
)
def test_expressions(expression: str, expected: bool) -> None:
    assert _eval(expression) is expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("true", True),
        ("True", True),
        ("yes", True),
        ("on", True),
        ("1", True),
        ("y", True),
        ("t", True),
        ("false", False),
        ("FALSE", False),
        ("no", False),
        ("off", False),
        ("0", False),
        ("n", False),
        ("f", False),
    ],
)
def test_polyaxon_boolean_words(word: str, expected: bool) -> None:
    assert _eval(word) is expected
    assert _eval("{{ '" + word + "' }}") is expected


def test_invalid_result_quotes_the_expression() -> None:
    expression = "{{ lr * 2 }}"
    with pytest.raises(ConditionError, match=r"`\{\{ lr \* 2 \}\}` gave '0.2'") as info:
        _eval(expression)
    assert info.value.expression == expression
    assert info.value.op_name == "tune"
    assert "operation `tune`" in str(info.value)


def test_status_word_is_not_a_boolean() -> None:
    with pytest.raises(ConditionError, match="gave 'failed'"):
        _eval("{{ ops.check.globals.status }}")


def test_untemplated_expression_is_an_error_not_false() -> None:
    with pytest.raises(ConditionError, match=re.escape("`lr > 0.05` gave 'lr > 0.05'")) as info:
        _eval("lr > 0.05")
    assert "{{ }}" in (info.value.hint or "")


def test_undefined_name_is_an_error() -> None:
    with pytest.raises(
        ConditionError, match=r"undefined name `upstream_loss` in `\{\{ upstream_loss > 1 \}\}`"
    ):
        _eval("{{ upstream_loss > 1 }}")


def test_unknown_op_output_lists_what_exists() -> None:
    with pytest.raises(ConditionError, match=re.escape("ops.train.outputs has: loss")):
        _eval("{{ ops.train.outputs.accuracy > 0.5 }}")


def test_op_not_finished_is_an_error() -> None:
    with pytest.raises(ConditionError, match=re.escape("undefined name `ops.tune`")):
        _eval("{{ ops.tune.outputs.loss > 1 }}")


def test_sandbox_refuses_unsafe_access() -> None:
    with pytest.raises(ConditionError, match="unsafe template"):
        _eval("{{ lr.__class__.__mro__ }}")


def test_quick_start_condition_with_a_context_only_ref() -> None:
    loaded = load_polyaxonfile(ROOT / "examples" / "quick-start" / "dag.yaml")
    plan = plan_dag(loaded.operation)
    tune = plan.ops["tune"]
    for loss, expected in ((0.5, True), (0.001, False)):
        scope = DagScope(
            inputs=loaded.params,
            globals={"project_name": "demo"},
            records={"experiment": OpRecord("experiment", "succeeded", outputs={"loss": loss})},
        )
        params = resolve_params(tune, scope)
        assert evaluate_conditions(tune, params, scope) is expected
