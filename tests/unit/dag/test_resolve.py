"""Resolving a DAG op's params from finished upstream ops and the DAG itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.dag import DagScope, OpRecord, plan_dag, resolve_params
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.specs import Operation

ROOT = Path(__file__).resolve().parents[3]
JOB = {"kind": "job", "container": {"image": "busybox", "command": ["true"]}}

DAG_GLOBALS = {
    "uuid": "dag0",
    "name": "pipe",
    "project_name": "demo",
    "run_artifacts_path": "/store/demo/dag0",
    "run_outputs_path": "/store/demo/dag0/outputs",
}
TRAIN = OpRecord(
    name="train",
    status="succeeded",
    uuid="abc123",
    inputs={"lr": 0.1, "layers": [1, 2]},
    outputs={"loss": 0.25, "ratio": "0.5", "epochs": 3, "model": "model.pt"},
    globals={
        "uuid": "abc123",
        "name": "train",
        "project_name": "demo",
        "run_outputs_path": "/store/demo/abc123/outputs",
    },
    artifacts_path="/store/demo/abc123",
)
SKIPPED = OpRecord(name="tune", status="skipped")
SCOPE = DagScope(
    inputs={"max_loss": 0.01, "top": 5, "name": "demo"},
    globals=DAG_GLOBALS,
    records={"train": TRAIN, "tune": SKIPPED},
)


def _op(params: dict[str, Any], inputs: list[dict[str, Any]]) -> Operation:
    return Operation.model_validate(
        {
            "kind": "operation",
            "name": "report",
            "params": params,
            "component": {"kind": "component", "inputs": inputs, "run": JOB},
        }
    )


def _ref(ref: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "value": value, **extra}


def test_op_outputs_inputs_and_globals() -> None:
    op = _op(
        {
            "loss": _ref("ops.train", "outputs.loss"),
            "lr": _ref("ops.train", "inputs.lr"),
            "layers": _ref("ops.train", "inputs.layers"),
            "status": _ref("ops.train", "globals.status"),
            "run_uuid": _ref("ops.train", "{{ globals.uuid }}"),
            "project": _ref("ops.train", "globals.project_name"),
        },
        [
            {"name": "loss", "type": "float"},
            {"name": "lr", "type": "float"},
            {"name": "layers", "type": "int", "isList": True},
            {"name": "status", "type": "str"},
            {"name": "run_uuid", "type": "str"},
            {"name": "project", "type": "str"},
        ],
    )
    assert resolve_params(op, SCOPE) == {
        "loss": 0.25,
        "lr": 0.1,
        "layers": [1, 2],
        "status": "succeeded",
        "run_uuid": "abc123",
        "project": "demo",
    }


def test_status_of_a_skipped_op_is_readable() -> None:
    op = _op({"s": _ref("ops.tune", "globals.status")}, [{"name": "s", "type": "str"}])
    assert resolve_params(op, SCOPE) == {"s": "skipped"}


def test_artifacts_refs() -> None:
    op = _op(
        {
            "base": _ref("ops.train", "artifacts.base"),
            "outputs": _ref("ops.train", "artifacts.outputs"),
            "model": _ref("ops.train", "artifacts.model"),
            "ckpt": _ref("ops.train", "artifacts.base.ckpt"),
            "all": _ref("ops.train", "artifacts", contextOnly=True),
            "io": _ref("ops.train", "io", contextOnly=True),
        },
        [
            {"name": "base", "type": "path"},
            {"name": "outputs", "type": "path"},
            {"name": "model", "type": "str"},
            {"name": "ckpt", "type": "path"},
        ],
    )
    params = resolve_params(op, SCOPE)
    assert params["base"] == "/store/demo/abc123"
    assert params["outputs"] == "/store/demo/abc123/outputs"
    assert params["model"] == "model.pt"
    assert params["ckpt"] == "/store/demo/abc123/ckpt"
    assert params["all"]["base"] == "/store/demo/abc123"
    assert params["io"]["outputs"]["loss"] == 0.25
    assert params["io"]["inputs"]["lr"] == 0.1


def test_dag_inputs_and_globals() -> None:
    op = _op(
        {
            "threshold": _ref("dag", "inputs.max_loss"),
            "top": _ref("dag", "inputs.top", contextOnly=True),
            "pipeline": _ref("dag", "globals.uuid"),
            "everything": _ref("dag", "inputs", contextOnly=True),
            "where": _ref("dag", "artifacts.outputs", contextOnly=True),
        },
        [
            {"name": "threshold", "type": "float"},
            {"name": "pipeline", "type": "str"},
        ],
    )
    assert resolve_params(op, SCOPE) == {
        "threshold": 0.01,
        "top": 5,
        "pipeline": "dag0",
        "everything": {"max_loss": 0.01, "top": 5, "name": "demo"},
        "where": "/store/demo/dag0/outputs",
    }


def test_values_are_typed_by_the_receiving_input() -> None:
    op = _op(
        {
            "ratio": _ref("ops.train", "outputs.ratio"),  # "0.5" -> 0.5
            "epochs_f": _ref("ops.train", "outputs.epochs"),  # 3 -> 3.0
            "epochs_s": _ref("ops.train", "outputs.epochs"),  # 3 -> "3"
            "raw": _ref("ops.train", "outputs.ratio", contextOnly=True),  # stays "0.5"
        },
        [
            {"name": "ratio", "type": "float"},
            {"name": "epochs_f", "type": "float"},
            {"name": "epochs_s", "type": "str"},
        ],
    )
    params = resolve_params(op, SCOPE)
    assert params == {"ratio": 0.5, "epochs_f": 3.0, "epochs_s": "3", "raw": "0.5"}
    assert isinstance(params["epochs_f"], float)


def test_literals_and_defaults_are_kept_and_typed() -> None:
    op = _op(
        {
            "lr": "0.3",
            "loss": _ref("ops.train", "outputs.loss"),
            "note": {"value": "x", "contextOnly": True},
        },
        [
            {"name": "lr", "type": "float"},
            {"name": "loss", "type": "float"},
            {"name": "batch", "type": "int", "value": 32},
        ],
    )
    assert resolve_params(op, SCOPE) == {"lr": 0.3, "loss": 0.25, "batch": 32, "note": "x"}


def test_missing_output_of_a_skipped_upstream_is_ref_unresolved() -> None:
    op = _op({"loss": _ref("ops.tune", "outputs.loss")}, [{"name": "loss", "type": "float"}])
    with pytest.raises(
        PolyaxonfileError, match=re.escape("`tune` ended `skipped` and has no `outputs.loss`")
    ) as info:
        resolve_params(op, SCOPE)
    problem = info.value.problems[0]
    assert problem.rule == "ref_unresolved"
    assert problem.path == ("params", "loss")
    assert "trigger" in (problem.hint or "")


def test_missing_value_falls_back_to_an_optional_inputs_default() -> None:
    op = _op(
        {"loss": _ref("ops.tune", "outputs.loss")},
        [{"name": "loss", "type": "float", "value": 1.0}],
    )
    assert resolve_params(op, SCOPE) == {"loss": 1.0}


def test_missing_output_of_a_succeeded_upstream_lists_what_it_has() -> None:
    op = _op({"acc": _ref("ops.train", "outputs.accuracy", contextOnly=True)}, [])
    with pytest.raises(PolyaxonfileError, match=re.escape("has no `outputs.accuracy`")) as info:
        resolve_params(op, SCOPE)
    assert "outputs.loss" in (info.value.problems[0].hint or "")


def test_unfinished_upstream_and_unknown_dag_input_are_reported_together() -> None:
    op = _op(
        {
            "a": _ref("ops.later", "outputs.x", contextOnly=True),
            "b": _ref("dag", "inputs.nope", contextOnly=True),
        },
        [],
    )
    with pytest.raises(PolyaxonfileError) as info:
        resolve_params(op, SCOPE)
    messages = [p.message for p in info.value.problems]
    assert len(messages) == 2
    assert "operation `later` has not finished" in messages[0]
    assert "the dag has no `inputs.nope`" in messages[1]
    assert {p.rule for p in info.value.problems} == {"ref_unresolved"}


def test_value_that_does_not_fit_the_input_is_ref_type() -> None:
    op = _op({"n": _ref("ops.train", "outputs.model")}, [{"name": "n", "type": "int"}])
    with pytest.raises(PolyaxonfileError, match="does not fit the input of type `int`") as info:
        resolve_params(op, SCOPE)
    assert info.value.problems[0].rule == "ref_type"


def test_runs_ref_reads_a_run_of_this_dag_by_uuid() -> None:
    uuid = "8a3c1f1e-1d3c-4a8e-9a43-5f4f9a6c2b11"
    scope = DagScope(
        inputs={},
        globals=DAG_GLOBALS,
        records={"train": OpRecord("train", "succeeded", uuid=uuid, outputs={"loss": 0.5})},
    )
    op = _op({"loss": _ref(f"runs.{uuid}", "outputs.loss")}, [{"name": "loss", "type": "float"}])
    assert resolve_params(op, scope) == {"loss": 0.5}
    other = _op(
        {"loss": _ref("runs.0b0b0b0b-1d3c-4a8e-9a43-5f4f9a6c2b11", "outputs.loss")},
        [{"name": "loss", "type": "float"}],
    )
    with pytest.raises(PolyaxonfileError, match="not part of this DAG"):
        resolve_params(other, scope)


def test_quick_start_tune_and_best_model() -> None:
    loaded = load_polyaxonfile(ROOT / "examples" / "quick-start" / "dag.yaml")
    plan = plan_dag(loaded.operation)
    scope = DagScope(
        inputs=loaded.params,
        globals=DAG_GLOBALS,
        records={"experiment": OpRecord("experiment", "succeeded", outputs={"loss": 0.2})},
    )
    tune = resolve_params(plan.ops["tune"], scope)
    assert tune["upstream_loss"] == 0.2
    assert tune["learning_rate"] == 0.01
    best = resolve_params(plan.ops["best_model"], scope)
    assert best == {"top": 5}
