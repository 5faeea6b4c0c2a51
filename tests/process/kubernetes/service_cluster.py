"""For the service tests: a fake Deployment controller on kmock's emulator, and the rules a real
API server adds to the schemas.

A fake, said plainly: no Kubernetes API server runs where these tests run. kmock serves the
real HTTP API (so the code under test makes the calls it makes against a cluster);
`FakeDeployments` only plays the Deployment controller's part, adding one ``Running`` pod per
replica of each Deployment (labels from its template) so the submitter sees its service start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import kmock

_DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _containers(manifest: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    pod = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
    yield from pod.get("initContainers") or []
    yield from pod.get("containers") or []


def _port_name(name: Any, where: str) -> list[str]:
    if name is None:
        return []
    ok = isinstance(name, str) and len(name) <= 15 and bool(_PORT_NAME.match(name))
    ok = ok and any(c.isalpha() for c in str(name))
    return [] if ok else [f"{where}: port name {name!r} is not an IANA service name"]


def api_server_rules(manifest: Mapping[str, Any]) -> list[str]:
    """What a real API server would refuse in ``manifest`` that its OpenAPI schema lets
    through: names, label values, images, env var names, port numbers and names."""
    errors: list[str] = []
    metadata = manifest.get("metadata") or {}
    name = str(metadata.get("name", ""))
    pattern = _DNS_1035_LABEL if manifest.get("kind") == "Service" else _DNS_1123_LABEL
    if len(name) > 63 or not pattern.match(name):
        errors.append(f"name {name!r} is not a DNS label")
    labels = dict(metadata.get("labels") or {})
    template = (manifest.get("spec") or {}).get("template") or {}
    labels.update((template.get("metadata") or {}).get("labels") or {})
    for key, value in labels.items():
        if len(str(value)) > 63 or not _LABEL_VALUE.match(str(value)):
            errors.append(f"label {key}: value {value!r} is not a label value")
    for container in _containers(manifest):
        where = f"container {container.get('name')}"
        if not container.get("image"):
            errors.append(f"{where}: no image")
        for env in container.get("env") or []:
            if not _ENV_NAME.match(str(env.get("name", ""))):
                errors.append(f"{where}: env var name {env.get('name')!r}")
        for port in container.get("ports") or []:
            if not 1 <= int(port.get("containerPort", 0)) <= 65535:
                errors.append(f"{where}: containerPort {port.get('containerPort')}")
            errors += _port_name(port.get("name"), where)
    for port in (manifest.get("spec") or {}).get("ports") or []:
        for key in ("port", "targetPort"):
            value = port.get(key)
            if isinstance(value, int) and not 1 <= value <= 65535:
                errors.append(f"service {key} {value} out of range")
        errors += _port_name(port.get("name"), "service")
    return errors


def _raw(obj: Any) -> dict[str, Any]:
    return dict(json.loads(json.dumps(obj.raw)))


class FakeDeployments:
    """Plays the Deployment controller: one pod per replica, ``scenario`` says in which state
    (``running``, or ``image_pull`` for a pod that cannot pull its image)."""

    def __init__(self, k: Any, scenario: str = "running") -> None:
        self.k = k
        self.scenario = scenario
        self.seen: set[Any] = set()

    async def run(self) -> None:
        while True:
            for key in list(self.k.objects.keys()):
                resource, namespace, name = key
                if resource.plural != "deployments" or key in self.seen:
                    continue
                if self.k.objects[key].deleted:
                    continue
                self.seen.add(key)
                self._pods(_raw(self.k.objects[key]), namespace, name)
            await asyncio.sleep(0.02)

    def _pods(self, deployment: dict[str, Any], namespace: str, name: str) -> None:
        template = deployment["spec"]["template"]
        container = template["spec"]["containers"][0]["name"]
        status: dict[str, Any] = {"phase": "Running"}
        if self.scenario == "image_pull":
            waiting = {"reason": "ErrImagePull", "message": 'pull access denied for "no/such"'}
            status = {
                "phase": "Pending",
                "containerStatuses": [{"name": container, "state": {"waiting": waiting}}],
            }
        for index in range(deployment["spec"].get("replicas", 1)):
            self.k.objects["v1/pods", namespace, f"{name}-5d8f7-{index}"] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-5d8f7-{index}",
                    "namespace": namespace,
                    "labels": dict(template["metadata"]["labels"]),
                },
                "spec": {"containers": [{"name": container}]},
                "status": status,
            }


@contextlib.asynccontextmanager
async def service_cluster(scenario: str = "running") -> AsyncIterator[Any]:
    """kmock's emulator on a loopback port with the fake Deployment controller."""
    async with kmock.KubernetesEmulator() as k, kmock.Server(k):
        k.resources["v1/pods"] = {}  # listing pods before the controller made one is not a 404
        controller = asyncio.create_task(FakeDeployments(k, scenario).run())
        try:
            yield k
        finally:
            controller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await controller
