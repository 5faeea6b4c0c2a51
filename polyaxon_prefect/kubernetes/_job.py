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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import Job, Termination

from ._groups import RUN_PATH, Target
from ._handback import wrap_command
from ._pod import PodInput, build_pod_template

__all__ = ["JOB_CONTAINER", "JOB_REPLICA", "PodHandback", "build_job", "hands_back"]

JOB_CONTAINER = "main"
JOB_REPLICA = "job"
"""The replica label of a job's pod (its log lines are prefixed ``[job]``)."""


@dataclass(frozen=True)
class PodHandback:
    """Where the pod's outputs are (its ``run_outputs_path``) and the marker of its block."""

    outputs_dir: str
    uuid: str
    nonce: str


def hands_back(run: Any) -> bool:
    """Whether ``run``'s pod hands its outputs back on its log (a job's does)."""
    return isinstance(run, Job)


def _job_spec(termination: Termination | None, template: dict[str, Any]) -> dict[str, Any]:
    # one attempt unless the file asks for retries: a job's retries are the pod's (the op is
    # not retried around the Job as well, see runtime._cluster)
    spec: dict[str, Any] = {"backoffLimit": 0}
    if isinstance(termination, Termination):
        if termination.max_retries is not None:
            spec["backoffLimit"] = termination.max_retries
        if termination.timeout is not None:
            spec["activeDeadlineSeconds"] = termination.timeout
        if termination.ttl is not None:
            spec["ttlSecondsAfterFinished"] = termination.ttl
        policy = termination.pod_failure_policy
        if policy is not None and not isinstance(policy, str):
            spec["podFailurePolicy"] = policy.to_dict()
    spec["template"] = template
    return spec


def build_job(
    run: Job,
    target: Target,
    *,
    env: Mapping[str, str] | None = None,
    handback: PodHandback | None = None,
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The Job of a (rendered) ``kind: job`` run, and the problems found.

    ``env`` is the run's tracking contract (where the pod's tracking writes, its params);
    ``handback`` wraps the main container's command so its outputs come back on its log.
    """
    pod = PodInput(
        container_name=JOB_CONTAINER,
        labels=target.labels(JOB_REPLICA),
        path=RUN_PATH,
        env=[{"name": k, "value": v} for k, v in (env or {}).items()],
        connections=target.connections,
        artifacts_store=target.artifacts_store,
        init_root=target.init_root,
        context_volume=True,
    )
    template, restart, problems = build_pod_template(run, pod)
    container = template["spec"]["containers"][0]
    command, args = container.get("command"), container.get("args")
    if handback is not None and isinstance(command, list) and isinstance(args, list | None):
        container["command"] = wrap_command(
            command, args, handback.outputs_dir, handback.uuid, handback.nonce
        )
        container.pop("args", None)
    template["spec"]["restartPolicy"] = "OnFailure" if restart == "OnFailure" else "Never"
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": target.metadata(target.name, JOB_REPLICA),
        "spec": _job_spec(target.termination, template),
    }
    return [manifest], problems
