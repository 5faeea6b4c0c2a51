"""Kubeflow Training Operator (``kubeflow.org/v1``) custom resources, one per run.

The operator starts the pods, injects the framework's env (``TF_CONFIG``, ``MASTER_ADDR``...)
and decides success, so a manifest is only the replica templates plus ``runPolicy``. Everything
kind-specific is a row of `KUBEFLOW` or of `_SPEC_FIELDS`, not a branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from polyaxon_prefect.exceptions import Problem
from polyaxon_prefect.specs import (
    MAIN_REPLICAS,
    MPIJob,
    MXJob,
    PaddleElasticPolicy,
    PaddleJob,
    PytorchElasticPolicy,
    PytorchJob,
    Termination,
    TFJob,
)
from polyaxon_prefect.specs.sections._run_spec import NonDagRuntime

from ._groups import Group, Target, main_group, replica_groups
from ._job import hand_back_from
from ._pod import PodInput, build_pod_template, quantities

__all__ = ["KUBEFLOW", "KubeflowKind", "build_kubeflow_job"]


class KubeflowKind(NamedTuple):
    """How one Polyaxon kind is written as a Kubeflow resource (``*_types.go`` defaults)."""

    api_version: str
    kind: str
    replica_specs: str
    replica_types: Mapping[str, str]
    """Polyaxon's YAML replica name -> the operator's replica type (its casing is the API's)."""
    container: str
    """The container name the operator looks for (its webhook requires one)."""
    port_name: str
    port: int
    restart_policy: str


_V1 = "kubeflow.org/v1"
KUBEFLOW: dict[str, KubeflowKind] = {
    "tfjob": KubeflowKind(
        _V1,
        "TFJob",
        "tfReplicaSpecs",
        {"chief": "Chief", "ps": "PS", "worker": "Worker", "evaluator": "Evaluator"},
        "tensorflow",
        "tfjob-port",
        2222,
        "Never",
    ),
    "pytorchjob": KubeflowKind(
        _V1,
        "PyTorchJob",
        "pytorchReplicaSpecs",
        {"master": "Master", "worker": "Worker"},
        "pytorch",
        "pytorchjob-port",
        23456,
        "OnFailure",
    ),
    "mpijob": KubeflowKind(
        _V1,
        "MPIJob",
        "mpiReplicaSpecs",
        {"launcher": "Launcher", "worker": "Worker"},
        "mpi",
        "mpi-port",
        9999,
        "Never",
    ),
    "mxjob": KubeflowKind(
        _V1,
        "MXJob",
        "mxReplicaSpecs",
        {
            "scheduler": "Scheduler",
            "server": "Server",
            "worker": "Worker",
            "tuner": "Tuner",
            "tunerTracker": "TunerTracker",
            "tunerServer": "TunerServer",
        },
        "mxnet",
        "mxjob-port",
        9091,
        "Never",
    ),
    "xgbjob": KubeflowKind(
        _V1,
        "XGBoostJob",
        "xgbReplicaSpecs",
        {"master": "Master", "worker": "Worker"},
        "xgboost",
        "xgboostjob-port",
        9999,
        "Never",
    ),
    "paddlejob": KubeflowKind(
        _V1,
        "PaddleJob",
        "paddleReplicaSpecs",
        {"master": "Master", "worker": "Worker"},
        "paddle",
        "master",
        36543,
        "OnFailure",
    ),
}
"""``{kind: (apiVersion, Kind, replicaSpecs key, replica types, container, port, restart)}``."""

_ELASTIC_NAMES = {
    "rdvzBackend": "rdzvBackend",
    "rdvzPort": "rdzvPort",
    "rdvzHost": "rdzvHost",
    "rdvzId": "rdzvId",
    "rdvzConf": "rdzvConf",
    "Metrics": "metrics",
}
"""Polyaxon spells the rendezvous fields ``rdvz``; the operator's CRD spells them ``rdzv``."""


def _elastic(policy: PytorchElasticPolicy | PaddleElasticPolicy) -> dict[str, Any]:
    return {_ELASTIC_NAMES.get(k, k): v for k, v in policy.to_dict().items()}


def _tf_fields(run: object) -> dict[str, Any]:
    assert isinstance(run, TFJob)
    return {"successPolicy": run.success_policy, "enableDynamicWorker": run.enable_dynamic_worker}


def _pytorch_fields(run: object) -> dict[str, Any]:
    assert isinstance(run, PytorchJob)
    nproc = run.n_proc_per_node
    return {
        "elasticPolicy": _elastic(run.elastic_policy) if run.elastic_policy else None,
        # a string in the v1.9 CRD: `auto`, `cpu`, `gpu` or a number
        "nprocPerNode": str(nproc) if nproc is not None else None,
    }


def _mpi_fields(run: object) -> dict[str, Any]:
    assert isinstance(run, MPIJob)
    return {"slotsPerWorker": run.slots_per_worker}


def _mx_fields(run: object) -> dict[str, Any]:
    assert isinstance(run, MXJob)
    return {"jobMode": run.mode or "MXTrain"}  # required by the CRD


def _paddle_fields(run: object) -> dict[str, Any]:
    assert isinstance(run, PaddleJob)
    return {"elasticPolicy": _elastic(run.elastic_policy) if run.elastic_policy else None}


_SPEC_FIELDS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "tfjob": _tf_fields,
    "pytorchjob": _pytorch_fields,
    "mpijob": _mpi_fields,
    "mxjob": _mx_fields,
    "paddlejob": _paddle_fields,
}
"""The kind's own ``spec`` fields (None values are left out)."""

_SINGLE_MAIN = frozenset({"tfjob", "pytorchjob", "mpijob", "mxjob"})
"""Kinds whose leading replica the operator's webhook allows only once."""


def run_policy(run: Any, termination: Termination | None) -> dict[str, Any]:
    """``runPolicy`` from the run's ``cleanPodPolicy``/``schedulingPolicy`` and ``termination``
    (``maxRetries`` -> ``backoffLimit``, ``timeout`` -> ``activeDeadlineSeconds``, ``ttl`` ->
    ``ttlSecondsAfterFinished``)."""
    policy: dict[str, Any] = {}
    if getattr(run, "clean_pod_policy", None):
        policy["cleanPodPolicy"] = run.clean_pod_policy
    if isinstance(termination, Termination):
        for key, value in (
            ("backoffLimit", termination.max_retries),
            ("activeDeadlineSeconds", termination.timeout),
            ("ttlSecondsAfterFinished", termination.ttl),
        ):
            if value is not None:
                policy[key] = value
    scheduling = getattr(run, "scheduling_policy", None)
    if scheduling is not None:
        data = scheduling.to_dict()
        if isinstance(data.get("minResources"), Mapping):
            data["minResources"] = quantities({"limits": data["minResources"]})["limits"]
        else:
            data.pop("minResources", None)
        policy["schedulingPolicy"] = data
    return policy


def _refusals(kind: str, groups: list[Group]) -> list[Problem]:
    """Per-index settings and a repeated leading replica: what the operator cannot run."""
    problems: list[Problem] = []
    for group in groups:
        for index in sorted(group.replica.index_overrides or {}):
            problems.append(
                Problem(
                    f"Kubeflow starts the {group.count} `{group.name}` pods from one template, "
                    f"so the settings of `{group.name}` index {index} cannot be applied",
                    rule="kubeflow_index_overrides",
                    path=(*group.path, "indexOverrides", index),
                    hint="use `backend: native` (`--backend native`): it runs an overridden "
                    "index as its own Job; or drop the override",
                )
            )
        if kind in _SINGLE_MAIN and group.name == MAIN_REPLICAS[kind] and group.count != 1:
            problems.append(
                Problem(
                    f"a {kind} runs exactly one `{group.name}`, got {group.count}",
                    rule="kubeflow_single_main",
                    path=(*group.path, "replicas"),
                    value=group.count,
                    hint=f"set `{group.name}.replicas: 1` and move the others to `worker`",
                )
            )
    return problems


def build_kubeflow_job(run: NonDagRuntime, target: Target) -> tuple[dict[str, Any], list[Problem]]:
    """The ``kubeflow.org/v1`` resource of ``run`` and the problems found."""
    table = KUBEFLOW[run.kind]
    groups, problems = replica_groups(run)
    problems += _refusals(run.kind, groups)
    main = main_group(run)
    replica_specs: dict[str, Any] = {}
    for group in groups:
        pod = PodInput(
            container_name=table.container,
            labels=target.labels(group.name),
            path=group.path,
            ports=({"name": table.port_name, "containerPort": table.port},),
            connections=target.connections,
            artifacts_store=target.artifacts_store,
            init_root=target.init_root,
        )
        template, restart, found = build_pod_template(group.replica, pod)
        problems += found
        if group.name == main:  # its pod 0 hands the run's outputs back
            hand_back_from(template, target)
        replica_specs[table.replica_types[group.name]] = {
            "replicas": group.count,
            "restartPolicy": restart or table.restart_policy,
            "template": template,
        }
    spec: dict[str, Any] = {}
    policy = run_policy(run, target.termination)
    if policy:
        spec["runPolicy"] = policy
    extra = _SPEC_FIELDS.get(run.kind)
    if extra is not None:
        spec.update({k: v for k, v in extra(run).items() if v is not None})
    spec[table.replica_specs] = replica_specs
    manifest = {
        "apiVersion": table.api_version,
        "kind": table.kind,
        "metadata": target.metadata(target.name),
        "spec": spec,
    }
    return manifest, problems
