"""`to_flow`: a component as a Prefect flow with typed parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prefect import Flow
from prefect.exceptions import ParameterTypeError

from polyaxon_prefect.prefect import to_flow

QUICK_START = Path(__file__).parents[2] / "examples" / "quick-start" / "typed.yaml"
SCRIPT = Path(__file__).with_name("job_script.py")


def test_quick_start_parameters_schema_is_typed():
    flow = to_flow(QUICK_START)

    assert isinstance(flow, Flow) and flow.name == "typed-experiment"
    schema = flow.parameters.model_dump()
    props = schema["properties"]
    assert list(props) == ["learning_rate", "dropout", "conv_activation", "epochs"]
    assert props["learning_rate"]["type"] == "number" and props["learning_rate"]["default"] == 0.01
    assert props["dropout"]["default"] == 0.2
    assert props["conv_activation"]["enum"] == ["relu", "sigmoid", "tanh"]
    assert props["conv_activation"]["default"] == "relu"
    assert props["epochs"]["type"] == "integer"
    assert props["epochs"]["minimum"] == 1 and props["epochs"]["maximum"] == 1000
    assert schema["required"] == ["epochs"]


def test_parameters_are_validated_by_prefect():
    flow = to_flow(QUICK_START)

    assert flow.validate_parameters({"epochs": "3"})["epochs"] == 3
    with pytest.raises(ParameterTypeError, match="conv_activation"):
        flow.validate_parameters({"epochs": 3, "conv_activation": "softmax"})


def test_container_types_optional_and_dashed_names(make_component: Any):
    path = make_component(
        "container: {command: [echo]}\n",
        inputs=(
            "- {name: layers, type: 'List[int]', value: [1, 2]}\n"
            "- {name: config, type: dict, isOptional: true}\n"
            "- {name: use-gpu, type: bool, value: false}\n"
            "- {name: data, type: s3, isOptional: true}\n"
            "- {name: repo, type: git, isOptional: true}\n"
        ),
        name="typed-containers",
    )

    props = to_flow(path).parameters.model_dump()["properties"]

    assert props["layers"]["type"] == "array" and props["layers"]["items"] == {"type": "integer"}
    assert props["layers"]["default"] == [1, 2]
    assert {"type": "object", "additionalProperties": True} in props["config"]["anyOf"]
    assert props["use_gpu"]["type"] == "boolean" and props["use_gpu"]["default"] is False
    assert {"type": "string"} in props["data"]["anyOf"]
    assert "type" not in props["repo"]  # structured: checked by Polyaxon's rules at run time


def test_calling_the_flow_runs_the_job_and_returns_outputs(make_component: Any, api: Any):
    path = make_component(
        f"container:\n  command: [python, '{SCRIPT}', ok, '{{{{ lr }}}}']\n",
        inputs="- {name: lr, type: float}\n",
        outputs="- {name: loss, type: float}\n",
        name="flow-job",
    )
    flow = to_flow(path)

    state = flow(lr=0.125, return_state=True)

    assert state.is_completed()
    assert state.result() == {"loss": 0.25}
    flow_run = api.flow_run(state.state_details.flow_run_id)
    assert flow_run.parameters == {"lr": 0.125}
    assert {"tests", "prefect"} <= set(flow_run.tags)


def test_a_failing_job_fails_the_flow_run(make_component: Any):
    path = make_component(
        f"container:\n  command: [python, '{SCRIPT}', fail]\n", name="flow-failing-job"
    )

    state = to_flow(path)(return_state=True)

    assert state.is_failed()
    assert "exited with code 3" in state.message
