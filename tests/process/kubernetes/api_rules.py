"""The rules a real API server adds that the JSON schemas miss, for any manifest we build.

kubernetes-validate and the CRD schemas say a field has the right type; an API server also
refuses a pod with no image, a name that is not a DNS-1123 label or subdomain, a label value
over 63 characters, an env var name a shell cannot hold, a port out of range. `check_manifest`
applies those (plus the strict schema validation of tests/unit/kubernetes) to one manifest, and
finds every pod template in it: a Job's, a Deployment's, a Kubeflow CR's replica specs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tests.unit.kubernetes.conftest import validate_manifest

__all__ = ["api_problems", "check_manifest", "pod_specs"]

_DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def pod_specs(manifest: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every pod spec in ``manifest``, with where it is."""
    spec = manifest.get("spec") or {}
    if manifest.get("kind") == "Pod":
        yield "spec", spec
    template = spec.get("template")
    if isinstance(template, Mapping):
        yield "spec.template.spec", template.get("spec") or {}
    for key, groups in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(groups, Mapping):
            for group, replica in groups.items():
                yield f"spec.{key}.{group}.template.spec", replica["template"]["spec"]


def _labels(where: str, metadata: Mapping[str, Any]) -> Iterator[str]:
    for key, value in (metadata.get("labels") or {}).items():
        if len(str(value)) > 63 or not _LABEL_VALUE.match(str(value)):
            yield f"{where}.labels[{key}]: invalid label value {value!r}"


def api_problems(manifest: Mapping[str, Any]) -> list[str]:
    """What an API server would refuse in ``manifest`` beyond its schema."""
    found: list[str] = []
    metadata = manifest.get("metadata") or {}
    name = str(metadata.get("name", ""))
    pattern = _DNS_1123_LABEL if manifest.get("kind") == "Service" else _DNS_1123_SUBDOMAIN
    if len(name) > 63 or not pattern.match(name):
        found.append(f"metadata.name: {name!r} is not a DNS-1123 name of at most 63 characters")
    found += _labels("metadata", metadata)
    for where, pod in pod_specs(manifest):
        template = (manifest.get("spec") or {}).get("template") or {}
        found += _labels(f"{where}.metadata", template.get("metadata") or {})
        containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
        for container in containers:
            at = f"{where} container {container.get('name')!r}"
            if not container.get("image"):
                found.append(f"{at}: image is required")
            if not _DNS_1123_LABEL.match(str(container.get("name", ""))):
                found.append(f"{at}: the name is not a DNS-1123 label")
            for item in container.get("env") or []:
                if not _ENV_NAME.match(str(item.get("name", ""))):
                    found.append(f"{at}: invalid env var name {item.get('name')!r}")
            for port in container.get("ports") or []:
                if not 1 <= int(port.get("containerPort", 0)) <= 65535:
                    found.append(f"{at}: containerPort {port.get('containerPort')} out of range")
    for port in (
        (manifest.get("spec") or {}).get("ports") or [] if manifest.get("kind") == "Service" else []
    ):
        if not 1 <= int(port.get("port", 0)) <= 65535:
            found.append(f"spec.ports: port {port.get('port')} out of range")
    return found


def check_manifest(manifest: dict[str, Any]) -> None:
    """Raise when ``manifest`` fails its strict schema or an API server's own rules."""
    validate_manifest(manifest)
    problems = api_problems(manifest)
    assert not problems, (
        f"{manifest.get('kind')} {manifest.get('metadata', {}).get('name')}: " + "; ".join(problems)
    )
