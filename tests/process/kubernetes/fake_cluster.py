"""A fake Kubernetes cluster for the submit tests: kmock's API server emulator, plus a fake
operator that plays the Training Operator's (or the Job controller's) part.

This is a fake, said plainly: no Kubernetes API server can run on the machines these tests run
on. kmock serves the real HTTP API paths (create, read, list, delete, pod logs) over loopback,
so the code under test goes through the same prefect-kubernetes credentials and
kubernetes-asyncio calls a cluster would get; what a real cluster adds (pods that really start,
schedulers, the operator's controllers) is played by `FakeOperator`, which only writes the
statuses a real one would write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import kmock

NAMESPACE = "team-a"


def kubeconfig(url: str) -> dict[str, Any]:
    """A kubeconfig whose current context points at ``url``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url.rstrip("/")}}],
        "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        "current-context": "fake",
    }


def credentials(url: str) -> Any:
    from prefect_kubernetes.credentials import KubernetesClusterConfig, KubernetesCredentials

    return KubernetesCredentials(
        cluster_config=KubernetesClusterConfig(config=kubeconfig(url), context_name="fake")
    )


def _raw(obj: Any) -> dict[str, Any]:
    return json.loads(json.dumps(obj.raw))


def live(k: Any, plural: str) -> list[tuple[Any, str, str]]:
    """The keys of the objects of ``plural`` that exist now (not deleted)."""
    return [
        key
        for key in list(k.objects.keys())
        if key[0].plural == plural and not k.objects[key].deleted
    ]


def ever(k: Any, plural: str) -> list[tuple[Any, str, str]]:
    """The keys of every object of ``plural`` ever created (deleted ones too)."""
    return [key for key in list(k.objects.keys()) if key[0].plural == plural]


class FakeOperator:
    """Plays the controllers: for each new training resource or Job it adds the pods a real
    controller would start (labels from the template, the replica index), then writes the
    outcome ``scenario`` asks for into the statuses."""

    def __init__(self, k: Any, scenario: str = "succeed", delay: float = 0.3) -> None:
        self.k = k
        self.scenario = scenario
        self.delay = delay
        self.seen: set[Any] = set()
        self.tasks: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        while True:
            for key in list(self.k.objects.keys()):
                if key in self.seen or self.k.objects[key].deleted:
                    continue
                resource, namespace, name = key
                if resource.group == "kubeflow.org":
                    self.seen.add(key)
                    self.tasks.append(asyncio.create_task(self._kubeflow(key, namespace, name)))
                elif resource.plural == "jobs":
                    self.seen.add(key)
                    self.tasks.append(asyncio.create_task(self._job(key, namespace, name)))
            await asyncio.sleep(0.02)

    def _pod(
        self,
        namespace: str,
        name: str,
        labels: dict[str, str],
        container: str,
        annotations: dict[str, str] | None = None,
    ) -> None:
        status = {"phase": "Running"}
        if self.scenario == "image_pull":
            status = {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": container,
                        "state": {
                            "waiting": {
                                "reason": "ErrImagePull",
                                "message": 'pull access denied for "no/such-image"',
                            }
                        },
                    }
                ],
            }
        elif self.scenario == "oom":
            status = {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": container,
                        "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    }
                ],
            }
        self.k.objects["v1/pods", namespace, name] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "annotations": dict(annotations or {}),
            },
            "spec": {"containers": [{"name": container}]},
            "status": status,
        }

    async def _kubeflow(self, key: Any, namespace: str, name: str) -> None:
        obj = _raw(self.k.objects[key])
        specs = next(v for k, v in obj["spec"].items() if k.endswith("ReplicaSpecs"))
        for replica_type, group in specs.items():
            template = group["template"]
            container = template["spec"]["containers"][0]["name"]
            for index in range(group.get("replicas", 1)):
                labels = {
                    **template["metadata"]["labels"],
                    "training.kubeflow.org/replica-type": replica_type.lower(),
                    "training.kubeflow.org/replica-index": str(index),
                }
                self._pod(namespace, f"{name}-{replica_type.lower()}-{index}", labels, container)
        await asyncio.sleep(self.delay)
        outcome = {
            "succeed": (
                "Succeeded",
                "JobSucceeded",
                f"{obj['kind']} {name} is successfully completed.",
            ),
            "oom": (
                "Failed",
                "JobFailed",
                f"{obj['kind']} {name} is failed because 1 Master replica(s) failed.",
            ),
        }.get(self.scenario)
        if outcome is None or self.k.objects[key].deleted:
            return  # stays running (cancel, timeout, image pull)
        kind, reason, message = outcome
        self.k.objects[key] = {
            **obj,
            "status": {
                "conditions": [
                    {"type": "Created", "status": "True", "reason": "JobCreated"},
                    {"type": "Running", "status": "False", "reason": "JobRunning"},
                    {"type": kind, "status": "True", "reason": reason, "message": message},
                ]
            },
        }

    async def _job(self, key: Any, namespace: str, name: str) -> None:
        obj = _raw(self.k.objects[key])
        template = obj["spec"]["template"]
        container = template["spec"]["containers"][0]["name"]
        for index in range(obj["spec"].get("completions", 1)):
            labels = {
                **template["metadata"]["labels"],
                "batch.kubernetes.io/job-completion-index": str(index),
            }
            self._pod(
                namespace,
                f"{name}-{index}-abcde",
                labels,
                container,
                annotations=template["metadata"].get("annotations"),
            )
        await asyncio.sleep(self.delay)
        group = template["metadata"]["labels"].get("polyaxon-prefect/replica")
        if self.k.objects[key].deleted or self.scenario != "succeed" or group == "ps":
            return  # parameter servers never finish on their own
        self.k.objects[key] = {
            **obj,
            "status": {"conditions": [{"type": "Complete", "status": "True"}]},
        }


@contextlib.asynccontextmanager
async def fake_cluster(scenario: str = "succeed") -> AsyncIterator[Any]:
    """The emulator on a loopback port, pod logs that name their pod, and the fake operator."""
    async with kmock.KubernetesEmulator() as k, kmock.Server(k):
        k["get", kmock.resource("v1/pods"), kmock.subresource("log")] << (
            lambda request: f"hello from {request.name}\nstep 1 loss=0.5\n".encode()
        )
        operator = asyncio.create_task(FakeOperator(k, scenario).run())
        try:
            yield k
        finally:
            operator.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await operator
