"""One replica (a ``_PodSpec`` plus, for one index, its ``ReplicaOverride``) as a pod template.

Shared by both backends: Kubeflow puts the template under ``{kind}ReplicaSpecs.<Type>``, the
native backend under a ``batch/v1`` Job. The run section is taken as loaded, so the operation's
``runPatch`` (applied to every replica by the loader) and presets are already in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import Environment, Job, KFReplica, ReplicaOverride

from ._mounts import ARTIFACTS_PATH, PodParts, add_connection, add_context_volume, add_init

__all__ = ["PodInput", "build_pod_template", "quantities"]

_RESOURCE_NAMES = {"gpu": "nvidia.com/gpu", "tpu": "cloud-tpus.google.com/v2"}
"""Legacy and shorthand resource names -> the Kubernetes extended resources."""
_GPU = "nvidia.com/gpu"

_POD_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "nodeName",
    "serviceAccountName",
    "hostAliases",
    "securityContext",
    "hostNetwork",
    "hostPID",
    "dnsPolicy",
    "dnsConfig",
    "schedulerName",
    "priorityClassName",
    "priority",
)
"""``environment`` fields copied onto the pod spec as they are (same names in both)."""


@dataclass(frozen=True)
class PodInput:
    """What a pod template is built from, besides the replica itself."""

    container_name: str
    labels: Mapping[str, str]
    path: tuple[str | int, ...]
    """Where the replica sits in the operation (problems are reported there)."""
    env: Sequence[Mapping[str, Any]] = ()
    """Env vars the backend adds (the native env contract); the container's own win."""
    ports: Sequence[Mapping[str, Any]] = ()
    connections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    artifacts_store: Mapping[str, Any] | None = None
    init_root: str = ARTIFACTS_PATH
    """Where init steps without a ``path`` write (`_mounts.add_init`)."""
    context_volume: bool = False
    """Mount the run context volume in the main container even with no init step."""


def _quantity(value: object) -> Any:
    """Numbers as Kubernetes quantity strings (``2`` -> ``"2"``, ``0.5`` -> ``"0.5"``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def quantities(resources: Mapping[str, Any]) -> dict[str, Any]:
    """Resources with Kubernetes names and quantities; a GPU request is also its limit.

    Kubernetes refuses an extended resource (``nvidia.com/gpu``) requested without a limit,
    and Polyaxon files often write only ``requests: {nvidia.com/gpu: 1}``.
    """
    result: dict[str, Any] = dict(resources)
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, Mapping):
            result[section] = {_RESOURCE_NAMES.get(k, k): _quantity(v) for k, v in values.items()}
    requests = result.get("requests") or {}
    if _GPU in requests and _GPU not in (result.get("limits") or {}):
        result["limits"] = {**(result.get("limits") or {}), _GPU: requests[_GPU]}
    return result


def _merged_environment(
    environment: Environment | None, override: ReplicaOverride | None
) -> dict[str, Any]:
    """The group's environment with an index's own fields replacing it, field by field."""
    base = environment.to_dict() if isinstance(environment, Environment) else {}
    if override is not None and override.environment is not None:
        base.update(override.environment.to_dict())
    return base


def _container(
    replica: KFReplica | Job, override: ReplicaOverride | None, pod: PodInput
) -> dict[str, Any]:
    main = replica.container
    given = main.to_dict() if main is not None and not isinstance(main, str) else {}
    container: dict[str, Any] = {"name": pod.container_name}
    container.update({k: v for k, v in given.items() if k != "name"})
    if override is not None and override.resources is not None:
        container["resources"] = override.resources.to_dict()
    if isinstance(container.get("resources"), Mapping):
        container["resources"] = quantities(container["resources"])
    own = {item.get("name") for item in container.get("env") or []}
    added = [dict(item) for item in pod.env if item.get("name") not in own]
    if added or container.get("env"):
        container["env"] = [*added, *(container.get("env") or [])]
    if pod.ports and not container.get("ports"):
        container["ports"] = [dict(port) for port in pod.ports]
    return container


def _parts(replica: KFReplica | Job, pod: PodInput) -> PodParts:
    parts = PodParts()
    if pod.context_volume:
        add_context_volume(parts)
    if isinstance(replica.connections, list):
        for i, name in enumerate(replica.connections):
            add_connection(parts, name, pod.connections, (*pod.path, "connections", i))
    if isinstance(replica.init, list):
        for i, init in enumerate(replica.init):
            if init.connection and not init.source and init.container is None:
                add_connection(parts, init.connection, pod.connections, (*pod.path, "init", i))
                continue
            add_init(parts, i, init, pod.artifacts_store, (*pod.path, "init", i), pod.init_root)
    return parts


def build_pod_template(
    replica: KFReplica | Job,
    pod: PodInput,
    override: ReplicaOverride | None = None,
) -> tuple[dict[str, Any], str | None, list[Problem]]:
    """The pod template of ``replica`` (with ``override`` for one index), the environment's
    ``restartPolicy`` (the backend decides where it goes), and the problems found."""
    environment = _merged_environment(
        replica.environment if isinstance(replica.environment, Environment) else None, override
    )
    parts = _parts(replica, pod)
    container = _container(replica, override, pod)
    if parts.env:
        container["env"] = [*(container.get("env") or []), *parts.env]
    if parts.env_from:
        container["envFrom"] = [*(container.get("envFrom") or []), *parts.env_from]
    if parts.mounts:
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), *parts.mounts]
    spec: dict[str, Any] = {}
    if parts.init_containers:
        spec["initContainers"] = parts.init_containers
    spec["containers"] = [container, *_sidecars(replica)]
    volumes = [v.to_dict() for v in replica.volumes or [] if not isinstance(v, str)]
    if volumes or parts.volumes:
        spec["volumes"] = [*volumes, *parts.volumes]
    spec.update({key: environment[key] for key in _POD_FIELDS if key in environment})
    if environment.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": name} for name in environment["imagePullSecrets"]]
    metadata: dict[str, Any] = {"labels": {**(environment.get("labels") or {}), **pod.labels}}
    if environment.get("annotations"):
        metadata["annotations"] = dict(environment["annotations"])
    problems = [*parts.problems, *_missing_images(spec, pod.path)]
    return {"metadata": metadata, "spec": spec}, environment.get("restartPolicy"), problems


def _missing_images(spec: Mapping[str, Any], path: tuple[str | int, ...]) -> list[Problem]:
    """A container with no ``image``: an API server refuses the pod (``spec.containers[0].image:
    Required value``), so it is the file's error, where it is written, before anything is
    created."""
    problems: list[Problem] = []
    where: list[tuple[dict[str, Any], tuple[str | int, ...], str]] = []
    containers = spec.get("containers") or []
    for i, container in enumerate(containers):
        at = (*path, "container") if i == 0 else (*path, "sidecars", i - 1)
        where.append((container, at, "the main container" if i == 0 else f"sidecar {i - 1}"))
    for container in spec.get("initContainers") or []:
        where.append((container, (*path, "init"), f"init container `{container.get('name')}`"))
    for container, at, what in where:
        if not container.get("image"):
            problems.append(
                Problem(
                    f"{what} has no `image`: a pod on Kubernetes needs one",
                    rule="k8s_no_image",
                    path=(*at, "image") if at[-1] != "init" else at,
                    hint="set `image:` (the image that has your code and its dependencies), "
                    "or run it locally without `--backend`",
                )
            )
    return problems


def _sidecars(replica: KFReplica | Job) -> list[dict[str, Any]]:
    if not isinstance(replica.sidecars, list):
        return []
    return [
        {"name": f"sidecar-{i}", **sidecar.to_dict()} if not sidecar.name else sidecar.to_dict()
        for i, sidecar in enumerate(replica.sidecars)
    ]
