"""One replica group of a distributed run as a Kubernetes pod template.

The run spec already holds real Kubernetes objects (the container, volumes, tolerations and
affinity are the generated strict models of `polyaxon_prefect.specs`), so a pod template is
their JSON form put where the pod spec wants them, plus the container name the operator looks
for (the webhook refuses a replica without it).
"""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import Environment, KFReplica

__all__ = ["pod_template"]

_ENVIRONMENT_FIELDS = {
    # Environment field -> pod spec key (what is not listed here is not a pod spec field).
    "node_selector": "nodeSelector",
    "affinity": "affinity",
    "tolerations": "tolerations",
    "node_name": "nodeName",
    "service_account_name": "serviceAccountName",
    "host_aliases": "hostAliases",
    "security_context": "securityContext",
    "host_network": "hostNetwork",
    "host_pid": "hostPID",
    "dns_policy": "dnsPolicy",
    "dns_config": "dnsConfig",
    "scheduler_name": "schedulerName",
    "priority_class_name": "priorityClassName",
    "priority": "priority",
}


def _json(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _pod_environment(environment: Environment | None) -> dict[str, Any]:
    if environment is None:
        return {}
    spec: dict[str, Any] = {}
    for field, key in _ENVIRONMENT_FIELDS.items():
        value = getattr(environment, field)
        if value is not None:
            spec[key] = _json(value)
    if environment.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in environment.image_pull_secrets]
    return spec


def pod_template(
    replica: KFReplica,
    *,
    container_name: str,
    labels: dict[str, str],
    where: tuple[str | int, ...],
) -> tuple[dict[str, Any], list[Problem]]:
    """The pod template of ``replica`` and the problems that keep it from being one.

    ``where`` locates problems (``("component", "run", "worker")``).
    """
    problems: list[Problem] = []
    container = _json(replica.container) if replica.container is not None else {}
    if not isinstance(container, dict) or not container.get("image"):
        problems.append(
            Problem(
                "a replica needs a container with an image to run on Kubernetes",
                rule="k8s_image_missing",
                path=(*where, "container", "image"),
                hint="set `container.image` (the local backend runs without one)",
            )
        )
        container = dict(container) if isinstance(container, dict) else {}
    container["name"] = container_name
    environment = replica.environment if isinstance(replica.environment, Environment) else None
    if isinstance(replica.environment, str):
        problems.append(
            Problem(
                f"`{replica.environment}` is still a template: a manifest needs its value",
                rule="k8s_unrendered",
                path=(*where, "environment"),
                hint="give the params it reads (-P) or write the environment",
            )
        )
    spec: dict[str, Any] = {"containers": [container]}
    spec.update(_pod_environment(environment))
    if replica.sidecars:
        spec["containers"] += [_json(sidecar) for sidecar in replica.sidecars]
    if replica.volumes:
        spec["volumes"] = _json(replica.volumes)
    metadata: dict[str, Any] = {
        "labels": {**labels, **((environment and environment.labels) or {})}
    }
    if environment is not None and environment.annotations:
        metadata["annotations"] = dict(environment.annotations)
    return {"metadata": metadata, "spec": spec}, problems
