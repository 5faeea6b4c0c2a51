"""Names say exactly which characters they take: ASCII letters, digits, `-` and `_` (flow,
task and Kubernetes names are made from them), so a Unicode letter or a trailing newline is
refused with a message that names the ASCII rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from polyaxon_prefect.specs import Component, Operation

JOB = {"kind": "job", "container": {"image": "x"}}


@pytest.mark.parametrize("name", ["trainé", "模型", "train\n", "a b"])
def test_operation_and_component_names_are_ascii(name: str) -> None:
    for model, payload in ((Operation, {"hubRef": "a"}), (Component, {"run": JOB})):
        with pytest.raises(ValidationError) as info:
            model.model_validate({"name": name, **payload})
        message = str(info.value)
        assert "ASCII letters (a-z, A-Z), digits (0-9), `-` and `_`" in message


@pytest.mark.parametrize("name", ["lr\n", "rate_é"])
def test_io_names_are_ascii(name: str) -> None:
    with pytest.raises(ValidationError, match="ASCII letters"):
        Component.model_validate({"run": JOB, "inputs": [{"name": name, "type": "int"}]})
