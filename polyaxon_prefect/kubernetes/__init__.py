"""Kubernetes manifests of a job or distributed run, as plain dicts (no Prefect, no client).

``build_manifests`` is what ``polyaxon-prefect compile --target kubernetes`` prints and what a
submitting executor creates; being pure, it is tested against the CRD and API schemas
without a cluster. A ``kind: job`` is one ``batch/v1`` Job on either backend (`_job`), its
outputs coming back on its log (`_handback`). A distributed run has two backends:

- ``kubeflow``: one ``kubeflow.org/v1`` resource (TFJob, PyTorchJob, MPIJob, MXJob, XGBoostJob,
  PaddleJob) for the Training Operator, which starts the pods and injects the env;
- ``native``: Indexed Jobs and a headless Service, the env contract computed here (as old
  Polyaxon did without an operator); the only backend that honours per-index settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.specs import (
    KUBEFLOW_KINDS,
    Dag,
    Job,
    LoadedPolyaxonfile,
    Operation,
    Service,
    Termination,
)

from ._cluster import (
    CRD_PLURALS,
    ApiTarget,
    PoolSettings,
    RunState,
    api_error_message,
    api_target,
    apply_pool_settings,
    exit_diagnosis,
    job_variables,
    kubeflow_state,
    native_state,
    pod_diagnosis_message,
    replica_name,
    run_selector,
)
from ._gpu_classes import (
    GPU_LIMIT_PREFIX,
    gpu_class_name,
    gpu_slots,
    no_limit_note,
    slots_refusal,
    slots_wait_reason,
)
from ._groups import RUN_PATH, Target
from ._handback import LIMIT_BYTES, Handback, HandbackParser, new_nonce
from ._job import JOB_CONTAINER, JOB_REPLICA, PodHandback, build_job, handback_replica, hands_back
from ._kubeflow import KUBEFLOW, build_kubeflow_job
from ._mounts import ARTIFACTS_PATH
from ._names import base_name
from ._native import build_native_jobs
from ._native_env import NATIVE_KINDS
from ._scheduling import (
    DISRUPTION_RETRIES_ENV,
    KUEUE_QUEUE_LABEL,
    PREVIOUS_OUTPUTS_ENV,
    QUEUE_VARIABLE,
    Disruption,
    disruption,
    disruption_budget,
    file_queue,
    pending_reason,
    resubmission,
    retry_after_disruption,
    schedule_manifests,
)
from ._service import build_service_manifests, port_forward_command

__all__ = [
    "ARTIFACTS_PATH",
    "BACKENDS",
    "CLUSTER_KINDS",
    "CRD_PLURALS",
    "DISRUPTION_RETRIES_ENV",
    "GPU_LIMIT_PREFIX",
    "JOB_CONTAINER",
    "JOB_REPLICA",
    "KUBEFLOW",
    "KUEUE_QUEUE_LABEL",
    "LIMIT_BYTES",
    "NATIVE_KINDS",
    "PREVIOUS_OUTPUTS_ENV",
    "QUEUE_VARIABLE",
    "ApiTarget",
    "Backend",
    "Disruption",
    "Handback",
    "HandbackParser",
    "PodHandback",
    "PoolSettings",
    "RunState",
    "api_error_message",
    "api_target",
    "apply_pool_settings",
    "base_name",
    "build_manifests",
    "default_backend",
    "disruption",
    "disruption_budget",
    "exit_diagnosis",
    "file_queue",
    "gpu_class_name",
    "gpu_slots",
    "handback_replica",
    "hands_back",
    "job_variables",
    "kubeflow_state",
    "native_state",
    "new_nonce",
    "no_limit_note",
    "pending_reason",
    "pod_diagnosis_message",
    "port_forward_command",
    "replica_name",
    "resubmission",
    "retry_after_disruption",
    "run_selector",
    "schedule_manifests",
    "slots_refusal",
    "slots_wait_reason",
]

Backend = Literal["kubeflow", "native"]
BACKENDS: tuple[Backend, ...] = ("kubeflow", "native")
CLUSTER_KINDS = frozenset({"job", *KUBEFLOW_KINDS})
"""The run kinds that become Kubernetes workloads here: a job, and the distributed kinds."""


def default_backend(loaded: LoadedPolyaxonfile | Operation) -> Backend:
    """``native`` for a legacy file (old Polyaxon's default, and the only backend for its
    per-index settings) when its kind can run natively; ``kubeflow`` otherwise."""
    from_legacy = isinstance(loaded, LoadedPolyaxonfile) and loaded.from_legacy
    operation = loaded.operation if isinstance(loaded, LoadedPolyaxonfile) else loaded
    run = operation.component.run if operation.component is not None else None
    if from_legacy and run is not None and run.kind in NATIVE_KINDS:
        return "native"
    return "kubeflow"


def _name(loaded: LoadedPolyaxonfile | Operation) -> str:
    operation = loaded.operation if isinstance(loaded, LoadedPolyaxonfile) else loaded
    component = operation.component
    name = operation.name or (component.name if component is not None else None)
    if not name and isinstance(loaded, LoadedPolyaxonfile) and loaded.files:
        name = Path(loaded.files[0]).stem
    return base_name(name or "run")


def _termination(operation: Operation) -> Termination | None:
    """The operation's ``termination`` over the component's, field by field."""
    component = operation.component
    merged: dict[str, Any] = {}
    for source in (component.termination if component else None, operation.termination):
        if isinstance(source, Termination):
            merged.update({k: getattr(source, k) for k in source.model_fields_set})
    return Termination(**merged) if merged else None


def _target(
    loaded_or_operation: LoadedPolyaxonfile | Operation,
    operation: Operation,
    namespace: str | None,
    connections: Mapping[str, Mapping[str, Any]] | None,
    artifacts_store: Mapping[str, Any] | None,
    *,
    init_root: str | None = None,
    env: Mapping[str, str] | None = None,
    handback: PodHandback | None = None,
) -> Target:
    return Target(
        name=_name(loaded_or_operation),
        namespace=namespace or operation.namespace,
        termination=_termination(operation),
        connections=dict(connections or {}),
        artifacts_store=artifacts_store,
        init_root=init_root or ARTIFACTS_PATH,
        env=dict(env or {}),
        handback=handback,
    )


def build_manifests(
    loaded_or_operation: LoadedPolyaxonfile | Operation,
    *,
    backend: Backend | None = None,
    namespace: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    artifacts_store: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    handback: PodHandback | None = None,
    init_root: str | None = None,
) -> list[dict[str, Any]]:
    """The manifests that run the operation's job or distributed run, in the order to apply
    them.

    ``backend`` defaults to `default_backend` (a job is one Job on either). ``connections`` is
    the agent's catalog by name (Polyaxon's shape: ``{kind, schema, secret, configMap, env}``)
    and ``artifacts_store`` its ``artifactsStore``, for the pods' connections and ``artifacts``
    init steps. ``env`` (the run's tracking contract) and ``handback`` (the outputs on the log
    of a job's pod, or of a distributed run's main pod) are the runtime's, as is ``init_root``
    (the pods' ``globals.artifacts_path``, where init steps without a ``path`` write). Raises
    `PolyaxonfileError` with every problem found (located by path in the operation).
    """
    operation = (
        loaded_or_operation.operation
        if isinstance(loaded_or_operation, LoadedPolyaxonfile)
        else loaded_or_operation
    )
    chosen = backend or default_backend(loaded_or_operation)
    files = getattr(loaded_or_operation, "files", ()) or ()
    run = operation.component.run if operation.component is not None else None
    target = _target(
        loaded_or_operation,
        operation,
        namespace,
        connections,
        artifacts_store,
        init_root=init_root,
        env=env,
        handback=None if isinstance(run, Service) else handback,
    )
    if isinstance(run, Service):  # a Deployment and a Service, whatever the backend
        service, problems = build_service_manifests(run, target)
        if problems:
            raise PolyaxonfileError(problems, file=files[0] if files else None)
        return service
    if run is None or isinstance(run, Dag) or run.kind not in CLUSTER_KINDS:
        kind = run.kind if run is not None else "none"
        raise PolyaxonfileError(
            [
                Problem(
                    "only jobs, services and distributed runs "
                    f"({', '.join(sorted(KUBEFLOW_KINDS))}) have Kubernetes manifests here, "
                    f"this one is a {kind}",
                    rule="k8s_kind",
                    path=(*RUN_PATH, "kind"),
                    hint="run other kinds with `polyaxon-prefect run`",
                )
            ],
            file=files[0] if files else None,
        )
    manifests: list[dict[str, Any]]
    if isinstance(run, Job):
        manifests, problems = build_job(run, target)
    elif chosen == "native":
        manifests, problems = build_native_jobs(run, target)
    else:
        manifest, problems = build_kubeflow_job(run, target)
        manifests = [manifest]
    if problems:
        raise PolyaxonfileError(problems, file=files[0] if files else None)
    return manifests
