"""The deployable entrypoints under flows/ build typed flows from their Polyaxonfiles."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_quick_start_entrypoint_exposes_typed_parameters() -> None:
    spec = importlib.util.spec_from_file_location("quick_start", ROOT / "flows" / "quick_start.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    properties = module.flow.parameters.properties
    assert {"learning_rate", "dropout", "conv_activation", "epochs"} <= set(properties)
    assert "epochs" in module.flow.parameters.required


def test_deployment_file_points_at_an_existing_entrypoint() -> None:
    config = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    for deployment in config["deployments"]:
        path, _, name = deployment["entrypoint"].partition(":")
        assert (ROOT / path).is_file()
        assert name == "flow"
