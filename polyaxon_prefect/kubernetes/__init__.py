"""Kubernetes manifests for Polyaxon runs: pure builders, dict in, dict out.

`build_manifests` renders a distributed operation as what a cluster runs: a Kubeflow Training
Operator custom resource (``backend="kubeflow"``). Nothing here talks to a cluster or imports
Prefect, so ``polyaxon-prefect compile --target kubernetes`` stays as light as ``check``, and
the manifests are tested against the operators' schemas without one.
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.kubernetes._kubeflow import KUBEFLOW, build_kubeflow_manifest
from polyaxon_prefect.kubernetes._names import resource_name
from polyaxon_prefect.specs import Operation, run_kind

__all__ = ["KUBEFLOW", "build_manifests", "resource_name", "templates_left"]


def build_manifests(
    operation: Operation, *, backend: str = "kubeflow", namespace: str | None = None
) -> list[dict[str, Any]]:
    """The manifests that run ``operation`` on Kubernetes with ``backend``.

    Raises:
        PolyaxonfileError: every problem at once (a kind with no manifest on that backend,
            per-index overrides on Kubeflow, a replica without an image, an unrendered value).
    """
    kind = run_kind(operation)
    if backend != "kubeflow" or kind not in KUBEFLOW:
        kinds = ", ".join(f"`{k}`" for k in KUBEFLOW)
        raise PolyaxonfileError(
            [
                Problem(
                    f"no `{backend}` manifest for run kind `{kind}`",
                    rule="k8s_unsupported",
                    path=("component", "run", "kind"),
                    hint=f"the `kubeflow` backend renders {kinds}; "
                    "the `native` backend (Indexed Jobs) is not built yet",
                )
            ]
        )
    name = str(operation.name or (operation.component and operation.component.name) or kind)
    manifest, problems = build_kubeflow_manifest(operation, name=name, namespace=namespace)
    if problems:
        raise PolyaxonfileError(problems)
    return [manifest]


def templates_left(value: Any, path: str = "") -> list[str]:
    """Where a manifest still holds a ``{{ }}`` template (``spec.tfReplicaSpecs.Worker...``):
    values such as ``globals.artifacts_path`` are only known when a run starts."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in templates_left(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in templates_left(v, f"{path}[{i}]")]
    if isinstance(value, str) and "{{" in value:
        return [path]
    return []
