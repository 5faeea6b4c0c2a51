"""The native backend: Indexed ``batch/v1`` Jobs plus one headless Service, no operator.

Each replica group is an Indexed Job (``completions = parallelism = replicas``) whose pods
resolve one another as ``{job}-{index}.{service}``. Legacy files tune single indexes
(``indexOverrides``); a pod template is shared by a whole Job, so a group is cut into Jobs of
consecutive indexes with the same settings, an overridden index getting a Job of its own. The
pod's index in its group is then the Job's offset plus ``JOB_COMPLETION_INDEX``, which the env
contract (`_native_env`) turns into ``TF_CONFIG``, ``RANK``, ``DMLC_*``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.distributed import Cluster, ReplicaPlan, plan_replicas
from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import ReplicaOverride, Termination
from polyaxon_prefect.specs.sections._run_spec import NonDagRuntime

from ._groups import RUN_PATH, Group, Target, main_group, replica_groups
from ._job import hand_back_from, termination_fields
from ._kubeflow import KUBEFLOW
from ._names import ANNOTATION_OFFSET, LABEL_RUN, child_name
from ._native_env import NATIVE_KINDS, native_contract, service_hosts, wrap_command
from ._pod import PodInput, build_pod_template

__all__ = ["Segment", "build_native_jobs", "segments"]


@dataclass(frozen=True)
class Segment:
    """Consecutive indexes of one group that share a pod template: one Indexed Job."""

    group: Group
    offset: int
    length: int
    override: ReplicaOverride | None

    def job_name(self, base: str) -> str:
        if self.offset == 0:
            return child_name(base, self.group.name)
        return child_name(base, self.group.name, self.offset)


def segments(group: Group) -> list[Segment]:
    """``group`` cut at its overridden indexes (each of those alone), in index order."""
    overrides = group.replica.index_overrides or {}
    found: list[Segment] = []
    start = 0
    for index in range(group.count + 1):
        if index == group.count or index in overrides:
            if index > start:
                found.append(Segment(group, start, index - start, None))
            if index < group.count:
                found.append(Segment(group, index, 1, overrides[index]))
            start = index + 1
    return found


def _addresses(cuts: list[Segment], base: str, service: str) -> dict[str, list[str]]:
    """Each group's pods' DNS names, by index: ``{job}-{index in job}.{service}``."""
    addresses: dict[str, list[str]] = {}
    for cut in cuts:
        job = cut.job_name(base)
        names = addresses.setdefault(cut.group.name, [])
        names += [f"{job}-{j}.{service}" for j in range(cut.length)]
    return addresses


def _service(target: Target, port_name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": target.metadata(target.name),
        "spec": {
            "clusterIP": "None",
            # pods find each other before they are ready (there is no readiness probe to pass)
            "publishNotReadyAddresses": True,
            "selector": {LABEL_RUN: target.name},
            "ports": [{"name": port_name, "port": port, "targetPort": port}],
        },
    }


def _job_spec(
    cut: Segment, template: dict[str, Any], termination: Termination | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": cut.length,
        "parallelism": cut.length,
        # a rank restarted alone cannot rejoin its peers' collectives: retries are the run's
        "backoffLimit": 0,
    }
    spec.update(termination_fields(termination))
    spec["template"] = template
    return spec


def _job(
    cut: Segment, target: Target, plan: ReplicaPlan, cluster: Cluster, main: str
) -> tuple[dict[str, Any], list[Problem]]:
    kind = KUBEFLOW[plan.kind]
    replicas = plan.of_type(cut.group.name)[cut.offset : cut.offset + cut.length]
    contract = native_contract(plan, replicas, cluster)
    env = {
        "POLYAXON_PREFECT_REPLICA_TYPE": cut.group.name,
        "POLYAXON_PREFECT_REPLICA_OFFSET": str(cut.offset),
        "POLYAXON_PREFECT_REPLICAS": str(cut.group.count),
        **contract.static,
    }
    pod = PodInput(
        container_name=kind.container,
        labels=target.labels(cut.group.name),
        path=cut.group.path,
        env=[{"name": k, "value": v} for k, v in env.items()],
        ports=({"name": kind.port_name, "containerPort": kind.port},),
        connections=target.connections,
        artifacts_store=target.artifacts_store,
        init_root=target.init_root,
    )
    template, restart, problems = build_pod_template(cut.group.replica, pod, cut.override)
    container = template["spec"]["containers"][0]
    command = container.get("command")
    args = container.get("args")
    if isinstance(command, list) and (args is None or isinstance(args, list)):
        wrapped = wrap_command(command, args, contract.lines)
        if wrapped is not None:
            container["command"] = wrapped
            container.pop("args", None)
    if cut.offset == 0 and cut.group.name == main:
        hand_back_from(template, target)  # its pod 0 hands the run's outputs back
    template["spec"]["subdomain"] = target.name
    if cut.offset:  # the pod's replica index is the offset plus its completion index
        annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION_OFFSET] = str(cut.offset)
    template["spec"]["restartPolicy"] = "OnFailure" if restart == "OnFailure" else "Never"
    job_name = cut.job_name(target.name)
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": target.metadata(job_name, cut.group.name),
        "spec": _job_spec(cut, template, target.termination),
    }
    return manifest, problems


def build_native_jobs(
    run: NonDagRuntime, target: Target
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The headless Service and the Indexed Jobs of ``run``, and the problems found."""
    if run.kind not in NATIVE_KINDS:
        problem = Problem(
            f"the native backend cannot run a {run.kind}: it needs the operator's launcher",
            rule="native_unsupported_kind",
            path=(*RUN_PATH, "kind"),
            value=run.kind,
            hint="use `--backend kubeflow` (the Kubeflow Training Operator)",
        )
        return [], [problem]
    groups, problems = replica_groups(run)
    cuts = [cut for group in groups for cut in segments(group)]
    if problems:
        return [], problems
    kind = KUBEFLOW[run.kind]
    hosts = service_hosts(_addresses(cuts, target.name, target.name))
    cluster = Cluster(hosts, dict.fromkeys(hosts, kind.port), target.name, kubernetes=True)
    plan = plan_replicas(run)
    manifests = [_service(target, kind.port_name, kind.port)]
    for cut in cuts:
        job, found = _job(cut, target, plan, cluster, main_group(run))
        manifests.append(job)
        problems += found
    return manifests, problems
