"""A distributed run as one Kubeflow Training Operator custom resource (``kubeflow.org/v1``).

One table says, per run kind, the resource kind, where its replica specs go, the replica-type
spelling and the container name the operator looks for; everything else (the run policy, each
replica's pod template) is shared. Kubeflow's replicas are uniform, so a legacy file's
per-index overrides (worker 2 with its own resources) cannot be expressed here: they are
refused with a located problem (Indexed Jobs, the native backend, will honour them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.kubernetes._names import resource_name
from polyaxon_prefect.kubernetes._pod import pod_template
from polyaxon_prefect.specs import Environment, KFReplica, Operation, is_template

__all__ = ["KUBEFLOW", "KubeflowKind", "build_kubeflow_manifest"]

API_VERSION = "kubeflow.org/v1"
RUN_LABEL = "polyaxon-prefect/run"
OP_LABEL = "polyaxon-prefect/op"


@dataclass(frozen=True)
class KubeflowKind:
    """How the operator names one run kind's parts (``*_types.go`` of training-operator)."""

    kind: str
    replica_specs: str
    container: str
    restart_policy: str
    replica_types: dict[str, str]
    """Our replica field -> the operator's replica type."""


KUBEFLOW: dict[str, KubeflowKind] = {
    "tfjob": KubeflowKind(
        "TFJob",
        "tfReplicaSpecs",
        "tensorflow",
        "Never",
        {"chief": "Chief", "ps": "PS", "worker": "Worker", "evaluator": "Evaluator"},
    ),
    "pytorchjob": KubeflowKind(
        "PyTorchJob",
        "pytorchReplicaSpecs",
        "pytorch",
        "OnFailure",
        {"master": "Master", "worker": "Worker"},
    ),
    "mpijob": KubeflowKind(
        "MPIJob", "mpiReplicaSpecs", "mpi", "Never", {"launcher": "Launcher", "worker": "Worker"}
    ),
    "mxjob": KubeflowKind(
        "MXJob",
        "mxReplicaSpecs",
        "mxnet",
        "Never",
        {
            "scheduler": "Scheduler",
            "server": "Server",
            "worker": "Worker",
            "tuner": "Tuner",
            "tuner_tracker": "TunerTracker",
            "tuner_server": "TunerServer",
        },
    ),
    "xgbjob": KubeflowKind(
        "XGBoostJob",
        "xgbReplicaSpecs",
        "xgboost",
        "Never",
        {"master": "Master", "worker": "Worker"},
    ),
    "paddlejob": KubeflowKind(
        "PaddleJob",
        "paddleReplicaSpecs",
        "paddle",
        "OnFailure",
        {"master": "Master", "worker": "Worker"},
    ),
}

_ELASTIC = {
    # Polyaxon's field (its own `rdvz` spelling) -> the operator's key
    "min_replicas": "minReplicas",
    "max_replicas": "maxReplicas",
    "max_restarts": "maxRestarts",
    "rdvz_backend": "rdzvBackend",
    "rdvz_port": "rdzvPort",
    "rdvz_host": "rdzvHost",
    "rdvz_id": "rdzvId",
    "standalone": "standalone",
    "n_proc_per_node": "nProcPerNode",
    "metrics": "metrics",
}


def _unrendered(value: Any, path: tuple[str | int, ...]) -> Problem | None:
    if isinstance(value, str) and is_template(value):
        return Problem(
            f"`{value}` is still a template: a manifest needs its value",
            rule="k8s_unrendered",
            path=path,
            hint="give the params it reads (-P) or write the value",
        )
    return None


def _run_policy(operation: Operation, run: Any) -> dict[str, Any]:
    """``runPolicy`` from the op's termination and the run's clean-up and scheduling."""
    policy: dict[str, Any] = {}
    termination = operation.termination or getattr(operation.component, "termination", None)
    if termination is not None:
        for field, key in (
            ("max_retries", "backoffLimit"),
            ("timeout", "activeDeadlineSeconds"),
            ("ttl", "ttlSecondsAfterFinished"),
        ):
            value = getattr(termination, field)
            if isinstance(value, int):
                policy[key] = value
    if run.clean_pod_policy is not None:
        policy["cleanPodPolicy"] = run.clean_pod_policy
    scheduling = run.scheduling_policy
    if scheduling is not None:
        policy["schedulingPolicy"] = scheduling.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    return policy


def _kind_fields(run: Any) -> dict[str, Any]:
    """The spec fields one kind has beyond its replicas and run policy."""
    fields: dict[str, Any] = {}
    if getattr(run, "success_policy", None) is not None:
        fields["successPolicy"] = run.success_policy
    if getattr(run, "enable_dynamic_worker", None) is not None:
        fields["enableDynamicWorker"] = run.enable_dynamic_worker
    if getattr(run, "n_proc_per_node", None) is not None:
        fields["nprocPerNode"] = str(run.n_proc_per_node)
    if getattr(run, "slots_per_worker", None) is not None:
        fields["slotsPerWorker"] = run.slots_per_worker
    if getattr(run, "mode", None) is not None:
        fields["jobMode"] = run.mode
    elastic = getattr(run, "elastic_policy", None)
    if elastic is not None:
        fields["elasticPolicy"] = {
            key: getattr(elastic, field)
            for field, key in _ELASTIC.items()
            if getattr(elastic, field, None) is not None
        }
    return fields


def _replica_spec(
    replica: KFReplica, table: KubeflowKind, labels: dict[str, str], where: tuple[str, ...]
) -> tuple[dict[str, Any], list[Problem]]:
    problems: list[Problem] = []
    if replica.index_overrides:
        problems.append(
            Problem(
                "Kubeflow replicas are uniform: per-index overrides cannot be expressed",
                rule="k8s_index_overrides",
                path=(*where, "indexOverrides"),
                hint="give every replica of the group the same settings; the native backend "
                "(Indexed Jobs), which honours per-index settings, is not available yet",
            )
        )
    count = replica.replicas if replica.replicas is not None else 1
    unrendered = _unrendered(count, (*where, "replicas"))
    if unrendered is not None:
        problems.append(unrendered)
    template, found = pod_template(
        replica, container_name=table.container, labels=labels, where=where
    )
    problems += found
    environment = replica.environment if isinstance(replica.environment, Environment) else None
    restart = (environment and environment.restart_policy) or table.restart_policy
    return {"replicas": count, "restartPolicy": restart, "template": template}, problems


def build_kubeflow_manifest(
    operation: Operation, *, name: str, namespace: str | None
) -> tuple[dict[str, Any], list[Problem]]:
    """The custom resource of ``operation``'s distributed run, and what keeps it from being
    valid (located problems; the manifest is only usable when there are none)."""
    run = operation.component.run if operation.component is not None else None
    table = KUBEFLOW[getattr(run, "kind", "")]
    job_name = resource_name(name)
    labels = {RUN_LABEL: job_name, OP_LABEL: resource_name(name, reserve=0)}
    problems: list[Problem] = []
    replica_specs: dict[str, Any] = {}
    for field, replica_type in table.replica_types.items():
        replica = getattr(run, field, None)
        if replica is None:
            continue
        where = ("component", "run", field)
        replica_specs[replica_type], found = _replica_spec(replica, table, labels, where)
        problems += found
    spec: dict[str, Any] = {**_kind_fields(run), "runPolicy": _run_policy(operation, run)}
    spec[table.replica_specs] = replica_specs
    metadata: dict[str, Any] = {"name": job_name, "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    manifest = {"apiVersion": API_VERSION, "kind": table.kind, "metadata": metadata, "spec": spec}
    return manifest, problems
