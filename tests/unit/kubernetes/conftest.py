"""Strict validation of rendered manifests, without a cluster.

Kubeflow kinds: the CRD's ``openAPIV3Schema`` (copied into ``tests/fixtures/k8s-schemas`` with
its attribution) made strict, since the API server would silently prune a misspelt field.
Built-in kinds: ``kubernetes-validate`` in strict mode.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "tests" / "fixtures" / "k8s-schemas"
K8S_VERSION = "1.30"

CRD_FILES = {
    "TFJob": "kubeflow.org_tfjobs.schema.json",
    "PyTorchJob": "kubeflow.org_pytorchjobs.schema.json",
    "MPIJob": "kubeflow.org_mpijobs.schema.json",
    "MXJob": "kubeflow.org_mxjobs.schema.json",
    "XGBoostJob": "kubeflow.org_xgboostjobs.schema.json",
    "PaddleJob": "kubeflow.org_paddlejobs.schema.json",
}


def strictify(schema: Any) -> Any:
    """``additionalProperties: false`` on every object schema with ``properties`` and no
    ``x-kubernetes-preserve-unknown-fields`` (the MANIFEST's strict pass)."""
    if isinstance(schema, dict):
        out = {k: strictify(v) for k, v in schema.items()}
        if (
            "properties" in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in out
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strictify(item) for item in schema]
    return schema


@cache
def _crd_validator(kind: str) -> Any:
    import jsonschema

    schema = strictify(json.loads((SCHEMAS / CRD_FILES[kind]).read_text()))
    return jsonschema.Draft4Validator(schema)


def validate_manifest(manifest: dict[str, Any]) -> None:
    """Raise when ``manifest`` does not validate strictly."""
    manifest = copy.deepcopy(manifest)
    if manifest["kind"] in CRD_FILES:
        errors = sorted(_crd_validator(manifest["kind"]).iter_errors(manifest), key=str)
        if errors:
            detail = "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
            raise AssertionError(f"{manifest['kind']} is invalid:\n{detail}")
        return
    import kubernetes_validate

    kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


@pytest.fixture
def validate() -> Callable[[dict[str, Any]], None]:
    return validate_manifest
