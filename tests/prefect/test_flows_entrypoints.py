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


def _load_generic(monkeypatch, file: str | None):  # type: ignore[no-untyped-def]
    if file is None:
        monkeypatch.delenv("POLYAXON_PREFECT_FILE", raising=False)
    else:
        monkeypatch.setenv("POLYAXON_PREFECT_FILE", file)
    spec = importlib.util.spec_from_file_location("generic", ROOT / "flows" / "polyaxonfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.flow


def test_the_generic_entrypoint_matches_what_each_deployment_passes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without POLYAXON_PREFECT_FILE it takes `polyaxonfile` and `params` (the prefect.yaml
    entries give exactly those), or `restart`; with it, it is that file's typed flow (the
    deploy command's form)."""
    generic = _load_generic(monkeypatch, None)
    names = set(generic.parameters.properties)
    assert names == {"polyaxonfile", "params", "restart"}
    config = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    for deployment in config["deployments"]:
        if deployment["entrypoint"] == "flows/polyaxonfile.py:flow":
            assert set(deployment["parameters"]) <= names
            assert (ROOT / deployment["parameters"]["polyaxonfile"]).is_file()
    typed = _load_generic(monkeypatch, str(ROOT / "examples" / "quick-start" / "dag.yaml"))
    assert typed.name == "automated-process"
    assert set(typed.parameters.properties) == {"max_loss", "top"}


def test_the_generic_flow_runs_a_file_given_as_a_parameter(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    generic = _load_generic(monkeypatch, None)
    state = generic(
        polyaxonfile=str(ROOT / "examples" / "quick-start" / "typed.yaml"),
        params={"epochs": 1},
        return_state=True,
    )
    assert state.is_completed(), state.message
