"""A ``kind: job`` op as one ``batch/v1`` Job: one pod, the op's own image and resources.

Polyaxon runs every op as its own pod, so a DAG's ops and a sweep's trials each get their
image, GPUs and node placement. The pod template is the one the distributed kinds build
(`_pod.build_pod_template`: environment fields, connections, init containers into the
``/plx-context`` volume); what is a job's own is here: ``termination`` on the Job
(``backoffLimit`` from ``maxRetries``, ``activeDeadlineSeconds`` from ``timeout``,
``ttlSecondsAfterFinished`` from ``ttl``), the run's tracking env, and the main container's
command wrapped so that its outputs and metrics come back on its log (`_handback`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import Job, Termination, replica_fields

from ._groups import RUN_PATH, Target, main_group
from ._handback import wrap_command
from ._mounts import PodParts, add_context_volume
from ._pod import PodInput, build_pod_template

__all__ = [
    "JOB_CONTAINER",
    "JOB_REPLICA",
    "PodHandback",
    "build_job",
    "hand_back_from",
    "handback_replica",
    "hands_back",
]

JOB_CONTAINER = "main"
JOB_REPLICA = "job"
"""The replica label of a job's pod (its log lines are prefixed ``[job]``)."""


@dataclass(frozen=True)
class PodHandback:
    """Where the pod's outputs are (its ``run_outputs_path``) and the marker of its block."""

    outputs_dir: str
    uuid: str
    nonce: str
    replica: str = JOB_REPLICA
    """The pod whose log carries the block, as the watcher names pods (``job``, ``master-0``)."""


def hands_back(run: Any) -> bool:
    """Whether ``run``'s pod hands its outputs back on its log: a job's, and the main replica's
    of a distributed run (whose outputs are the run's, as locally)."""
    return isinstance(run, Job) or bool(replica_fields(run))


def handback_replica(run: Any) -> str:
    """The pod that hands ``run``'s outputs back: ``job``, or the main group's pod 0."""
    return JOB_REPLICA if isinstance(run, Job) else f"{main_group(run)}-0"


def hand_back_from(template: dict[str, Any], target: Target) -> None:
    """Make ``template``'s pod the one that hands the run's outputs back: the tracking env,
    the context volume its outputs are written in, and its command wrapped (`_handback`)."""
    handback = target.handback
    if not isinstance(handback, PodHandback):
        return
    spec = template["spec"]
    container = spec["containers"][0]
    own = {item.get("name") for item in container.get("env") or []}
    added = [{"name": k, "value": v} for k, v in target.env.items() if k not in own]
    if added:
        container["env"] = [*(container.get("env") or []), *added]
    parts = PodParts()
    add_context_volume(parts)
    volumes = spec.setdefault("volumes", [])
    volumes += [v for v in parts.volumes if v["name"] not in {x["name"] for x in volumes}]
    mounts = container.setdefault("volumeMounts", [])
    mounts += [m for m in parts.mounts if m["mountPath"] not in {x["mountPath"] for x in mounts}]
    command, args = container.get("command"), container.get("args")
    if isinstance(command, list) and isinstance(args, list | None):
        container["command"] = wrap_command(
            command, args, handback.outputs_dir, handback.uuid, handback.nonce
        )
        container.pop("args", None)


def _job_spec(termination: Termination | None, template: dict[str, Any]) -> dict[str, Any]:
    # one attempt unless the file asks for retries: a job's retries are the pod's (the op is
    # not retried around the Job as well, see runtime.prepare_cluster)
    spec: dict[str, Any] = {"backoffLimit": 0}
    spec.update(termination_fields(termination))
    spec["template"] = template
    return spec


def build_job(run: Job, target: Target) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The Job of a (rendered) ``kind: job`` run, and the problems found; its pod hands the
    outputs back when ``target`` says how (`hand_back_from`)."""
    pod = PodInput(
        container_name=JOB_CONTAINER,
        labels=target.labels(JOB_REPLICA),
        path=RUN_PATH,
        connections=target.connections,
        artifacts_store=target.artifacts_store,
        init_root=target.init_root,
        context_volume=True,
    )
    template, restart, problems = build_pod_template(run, pod)
    hand_back_from(template, target)
    template["spec"]["restartPolicy"] = "OnFailure" if restart == "OnFailure" else "Never"
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": target.metadata(target.name, JOB_REPLICA),
        "spec": _job_spec(target.termination, template),
    }
    return [manifest], problems


def termination_fields(termination: Termination | None) -> dict[str, Any]:
    """A ``batch/v1`` Job's fields from Polyaxon's ``termination``: ``maxRetries`` is
    ``backoffLimit``, ``timeout`` ``activeDeadlineSeconds``, ``ttl``
    ``ttlSecondsAfterFinished``, and a ``podFailurePolicy`` as written (a plain job's Job and
    each Indexed Job of a distributed run read them the same way)."""
    fields: dict[str, Any] = {}
    if not isinstance(termination, Termination):
        return fields
    if termination.max_retries is not None:
        fields["backoffLimit"] = termination.max_retries
    if termination.timeout is not None:
        fields["activeDeadlineSeconds"] = termination.timeout
    if termination.ttl is not None:
        fields["ttlSecondsAfterFinished"] = termination.ttl
    policy = termination.pod_failure_policy
    if policy is not None and not isinstance(policy, str):
        fields["podFailurePolicy"] = policy.to_dict()
    return fields
