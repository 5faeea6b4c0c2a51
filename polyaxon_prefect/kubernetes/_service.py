"""A ``kind: service`` run as Kubernetes manifests: an ``apps/v1`` Deployment and a ClusterIP
``v1`` Service (pure, plain dicts).

Polyaxon runs a service as pods behind a Kubernetes Service that its proxy reaches; here the
Deployment keeps ``replicas`` pods (one by default, as Polyaxon) of the op's pod template (the
same one a job's pod gets: `build_pod_template`, so connections, init steps, sidecars and the
``environment`` section apply alike), and the Service exposes its ``ports`` inside the cluster.
There is no proxy: `port_forward_command` is how a user reaches it. A Deployment restarts its
pods (``restartPolicy: Always``, the only policy it accepts) and has no deadline of its own:
``termination.timeout`` is the submitter's to enforce, by deleting both objects.
"""

from __future__ import annotations

from typing import Any, cast

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import KFReplica, Service

from ._groups import RUN_PATH, Target
from ._names import LABEL_RUN
from ._pod import PodInput, build_pod_template

__all__ = ["SERVICE_CONTAINER", "build_service_manifests", "port_forward_command", "port_name"]

SERVICE_CONTAINER = "polyaxon-main"
"""The main container's name when the file gives none (Polyaxon's own main container name)."""


def port_name(port: int) -> str:
    """A port's name: an IANA service name (at most 15 characters, a letter in it)."""
    return f"port-{port}"


def port_forward_command(namespace: str, name: str, ports: list[int]) -> str:
    """The ``kubectl port-forward`` line that reaches the service's ports from this machine."""
    pairs = " ".join(f"{port}:{port}" for port in ports)
    return f"kubectl port-forward -n {namespace} svc/{name} {pairs}"


def _ports(run: Service) -> tuple[list[int], list[Problem]]:
    ports = run.ports
    if ports is None:
        return [], []
    if not isinstance(ports, list):
        problem = Problem(
            "`ports` is still a template, so the Service cannot be written",
            rule="k8s_templated_ports",
            path=(*RUN_PATH, "ports"),
            value=ports,
            hint="give the param a value with `-P name=value`",
        )
        return [], [problem]
    problems = [
        Problem(
            f"a service port must be from 1 to 65535, got {port}",
            rule="k8s_port_range",
            path=(*RUN_PATH, "ports", i),
            value=port,
        )
        for i, port in enumerate(ports)
        if not 1 <= port <= 65535
    ]
    return list(dict.fromkeys(ports)), problems


def _replicas(run: Service) -> int:
    count = run.replicas
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def build_service_manifests(
    run: Service, target: Target
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The Deployment and (when the service has ports) the ClusterIP Service of ``run``, and
    the problems found (a container with no image, bad ports, connections, init steps)."""
    ports, problems = _ports(run)
    container_name = SERVICE_CONTAINER
    if run.container is not None and not isinstance(run.container, str) and run.container.name:
        container_name = run.container.name
    pod = PodInput(
        container_name=container_name,
        labels=target.labels(),
        path=RUN_PATH,
        ports=tuple({"name": port_name(p), "containerPort": p} for p in ports),
        connections=target.connections,
        artifacts_store=target.artifacts_store,
        init_root=target.init_root,  # init steps write where `globals.artifacts_path` renders
    )
    # A service's pod fields are a replica's (`_PodSpec`), without the replica count.
    template, _restart, found = build_pod_template(cast(KFReplica, run), pod)
    problems += found
    # a container without an image is the pod template's problem (`k8s_no_image`)
    template["spec"]["restartPolicy"] = "Always"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": target.metadata(target.name),
        "spec": {
            "replicas": _replicas(run),
            "selector": {"matchLabels": {LABEL_RUN: target.name}},
            "template": template,
        },
    }
    manifests = [deployment]
    if ports:
        manifests.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": target.metadata(target.name),
                "spec": {
                    "type": "ClusterIP",
                    "selector": {LABEL_RUN: target.name},
                    "ports": [
                        {"name": port_name(p), "port": p, "targetPort": p, "protocol": "TCP"}
                        for p in ports
                    ],
                },
            }
        )
    return manifests, problems
