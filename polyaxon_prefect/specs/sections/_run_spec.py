"""The ``run:`` section for every runtime except ``dag`` (spec 4).

Single-pod kinds (``job``, ``service``, ``notifier``, ``cleaner``, ``tuner``) share the
``_PodSpec`` fields. Distributed kinds hold named replica sections; :func:`replica_fields` lists
the ones a run sets, so executors never hard-code replica names per kind.
"""

from typing import Annotated, Any, ClassVar, Literal, Self, TypeAlias, get_args

from annotated_types import Ge
from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._or_ref import BoolOrRef, IntOrRef, PositiveIntOrRef
from polyaxon_prefect.specs._templated import NonNegativeIntOrRef, Templated
from polyaxon_prefect.specs.kubernetes._k8s import Container, ResourceRequirements, Volume
from polyaxon_prefect.specs.sections._environment import Environment
from polyaxon_prefect.specs.sections._init import Init

__all__ = [
    "DISTRIBUTED_KINDS",
    "DISTRIBUTED_RUNTIMES",
    "KUBEFLOW_KINDS",
    "LAUNCHED_KINDS",
    "MAIN_REPLICAS",
    "NON_DAG_RUNTIMES",
    "REPLICA_NAMES",
    "AutoscalerOptions",
    "CleanPodPolicy",
    "CleanerJob",
    "DaskCluster",
    "DaskReplica",
    "Job",
    "KFReplica",
    "MPIJob",
    "MXJob",
    "NonDagRuntime",
    "NotifierJob",
    "PaddleElasticPolicy",
    "PaddleJob",
    "PytorchElasticPolicy",
    "PytorchJob",
    "RayCluster",
    "RayReplica",
    "ReplicaOverride",
    "SchedulingPolicy",
    "Service",
    "TFJob",
    "TunerJob",
    "XGBoostJob",
    "replica_fields",
]

CleanPodPolicy = Literal["All", "Running", "None"]


class _PodSpec(BaseSpec):
    """What one pod needs: environment, connections, volumes, init steps, sidecars, container."""

    environment: Templated[Environment] | None = None
    connections: Templated[list[StrictStr]] | None = None
    volumes: Templated[list[Volume]] | None = None
    init: Templated[list[Init]] | None = None
    sidecars: Templated[list[Container]] | None = None
    container: Templated[Container] | None = None

    @model_validator(mode="after")
    def _gpu_counts(self) -> Self:
        """A GPU count (``nvidia.com/gpu``, ``gpu``, any ``<vendor>/gpu``) is a whole number
        >= 0 or a template: ``-1`` or ``0.5`` are Kubernetes quantities, so they passed
        ``check`` and failed only when the op ran."""
        resources = getattr(self.container, "resources", None)
        for section in ("limits", "requests"):
            for key, value in (getattr(resources, section, None) or {}).items():
                if _is_gpu_key(key) and not _whole_count(value):
                    raise PydanticCustomError(
                        "invalid_gpus",
                        f"a GPU count is a whole number >= 0, got {value!r} for `{key}`",
                        {
                            "hint": f"set `{key}` to 0, 1, 2...",
                            "at": ["container", "resources", section, key],
                        },
                    )
        return self


def _is_gpu_key(key: str) -> bool:
    return key == "gpu" or key.endswith("/gpu")


def _whole_count(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and (value.strip().isdigit() or "{{" in value)


# --- single-pod kinds ------------------------------------------------------------------------


class Job(_PodSpec):
    """A run-to-completion pod (``kind: job``)."""

    kind: Literal["job"] = "job"


class Service(_PodSpec):
    """A long-running pod exposing ``ports`` (``kind: service``)."""

    kind: Literal["service"] = "service"
    ports: Templated[list[StrictInt]] | None = None
    rewrite_path: BoolOrRef | None = None
    is_external: BoolOrRef | None = None
    replicas: PositiveIntOrRef | None = None


class NotifierJob(_PodSpec):
    """A job that sends notifications (``kind: notifier``)."""

    kind: Literal["notifier"] = "notifier"


class CleanerJob(_PodSpec):
    """A job that cleans run artifacts (``kind: cleaner``)."""

    kind: Literal["cleaner"] = "cleaner"


class TunerJob(_PodSpec):
    """A job that suggests the next matrix iteration (``kind: tuner``)."""

    kind: Literal["tuner"] = "tuner"


# --- Kubeflow kinds --------------------------------------------------------------------------


class ReplicaOverride(BaseSpec):
    """Per-index settings for one pod of a replica group.

    Our extension: legacy v0 files tune single workers/ps (``worker: [{index: 2, ...}]``), which
    Polyaxon v1.1 cannot express; the environment is merged over the group's, the resources
    replace the container's.
    """

    environment: Environment | None = None
    resources: ResourceRequirements | None = None


class KFReplica(_PodSpec):
    """One replica group of a Kubeflow job: ``replicas`` identical pods."""

    replicas: PositiveIntOrRef | None = None
    index_overrides: dict[Annotated[int, Ge(0)], ReplicaOverride] | None = None

    @field_validator("index_overrides")
    @classmethod
    def _indexes_in_range(cls, value: Any, info: ValidationInfo) -> Any:
        if not value:
            return value
        replicas = info.data.get("replicas")
        # Kubeflow starts one pod when `replicas` is unset.
        count = 1 if replicas is None else replicas
        if isinstance(count, int):
            outside = sorted(index for index in value if index >= count)
            if outside:
                raise PydanticCustomError(
                    "replica_index_out_of_range",
                    "indexOverrides refers to replica index {indexes} but the group has "
                    "{count} replica(s) (indexes 0 to {last})",
                    {
                        "indexes": ", ".join(map(str, outside)),
                        "count": count,
                        "last": count - 1,
                        "hint": "raise `replicas` or drop the override",
                    },
                )
        return value

    @property
    def replica_count(self) -> int | None:
        """How many pods this group starts (1 when unset), or None while it is a template."""
        if self.replicas is None:
            return 1
        return self.replicas if isinstance(self.replicas, int) else None


class SchedulingPolicy(BaseSpec):
    """Gang-scheduling settings passed to the Kubeflow operator."""

    min_available: IntOrRef | None = None
    queue: StrictStr | None = None
    min_resources: Templated[int | dict[str, int | float | str]] | None = None
    priority_class: StrictStr | None = None
    schedule_timeout_seconds: NonNegativeIntOrRef | None = None


class _Distributed(BaseSpec):
    """Shared checks of the kinds made of named replica groups."""

    REPLICAS: ClassVar[tuple[str, ...]] = ()
    """The replica sections (Python field names), in declaration order."""
    MAIN_REPLICA: ClassVar[str] = ""
    """The YAML name of the replica that leads the job: it runs the entrypoint a single-pod
    run would (TF ``chief``, PyTorch ``master``, MPI ``launcher``, MXNet ``scheduler``, Ray
    ``head``, Dask ``scheduler``)."""
    LAUNCHERS: ClassVar[tuple[str, ...]] = ()
    """The YAML names of the replicas that start the others themselves (MPI's ``launcher``
    runs ``mpirun`` over the workers); empty when each replica is a process of its own."""

    @model_validator(mode="after")
    def _has_replicas(self) -> Self:
        if all(getattr(self, name) in (None, {}) for name in self.REPLICAS):
            kind = getattr(self, "kind", type(self).__name__)
            names = ", ".join(_yaml_name(type(self), name) for name in self.REPLICAS)
            raise PydanticCustomError(
                "distributed_without_replicas",
                "a {kind} run needs at least one replica section among {names}",
                {"kind": kind, "names": names},
            )
        return self


def _yaml_name(model: type[BaseSpec], name: str) -> str:
    return model.model_fields[name].alias or name


class _Kubeflow(_Distributed):
    clean_pod_policy: CleanPodPolicy | None = None
    scheduling_policy: SchedulingPolicy | None = None


class TFJob(_Kubeflow):
    """A TensorFlow ``TFJob``: ``chief``, ``ps``, ``worker`` and ``evaluator`` groups."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("chief", "ps", "worker", "evaluator")
    MAIN_REPLICA: ClassVar[str] = "chief"

    kind: Literal["tfjob"] = "tfjob"
    enable_dynamic_worker: StrictBool | None = None
    success_policy: StrictStr | None = None
    chief: Templated[KFReplica] | None = None
    ps: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None
    evaluator: Templated[KFReplica] | None = None


class PytorchElasticPolicy(BaseSpec):
    """Elastic (torchrun rendezvous) settings of a ``PyTorchJob``."""

    min_replicas: IntOrRef | None = None
    max_replicas: IntOrRef | None = None
    rdvz_backend: StrictStr | None = None
    rdvz_port: IntOrRef | None = None
    rdvz_host: StrictStr | None = None
    rdvz_id: StrictStr | None = None
    rdvz_conf: list[dict[str, Any]] | None = None
    standalone: BoolOrRef | None = None
    n_proc_per_node: IntOrRef | None = None
    max_restarts: IntOrRef | None = None
    # Polyaxon (following the Kubeflow CRD) spells this one with a capital M.
    metrics: list[dict[str, Any]] | None = Field(default=None, alias="Metrics")


class PytorchJob(_Kubeflow):
    """A ``PyTorchJob``: ``master`` and ``worker`` groups."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("master", "worker")
    MAIN_REPLICA: ClassVar[str] = "master"

    kind: Literal["pytorchjob"] = "pytorchjob"
    elastic_policy: PytorchElasticPolicy | None = None
    n_proc_per_node: IntOrRef | None = None
    master: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None


class MPIJob(_Kubeflow):
    """An ``MPIJob``: a ``launcher`` running ``mpirun`` over the ``worker`` pods."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("launcher", "worker")
    MAIN_REPLICA: ClassVar[str] = "launcher"
    LAUNCHERS: ClassVar[tuple[str, ...]] = ("launcher",)

    kind: Literal["mpijob"] = "mpijob"
    slots_per_worker: IntOrRef | None = None
    launcher: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None


class MXJob(_Kubeflow):
    """An ``MXJob`` (removed from Polyaxon in 2025, kept for older files)."""

    REPLICAS: ClassVar[tuple[str, ...]] = (
        "scheduler",
        "server",
        "worker",
        "tuner",
        "tuner_tracker",
        "tuner_server",
    )
    MAIN_REPLICA: ClassVar[str] = "scheduler"

    kind: Literal["mxjob"] = "mxjob"
    mode: Literal["MXTrain", "MXTune"] | None = None
    scheduler: Templated[KFReplica] | None = None
    server: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None
    tuner: Templated[KFReplica] | None = None
    tuner_tracker: Templated[KFReplica] | None = None
    tuner_server: Templated[KFReplica] | None = None


class XGBoostJob(_Kubeflow):
    """An ``XGBoostJob`` (``kind: xgbjob``; removed from Polyaxon in 2025)."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("master", "worker")
    MAIN_REPLICA: ClassVar[str] = "master"

    kind: Literal["xgbjob"] = "xgbjob"
    master: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None


class PaddleElasticPolicy(BaseSpec):
    """Elastic settings of a ``PaddleJob``."""

    min_replicas: IntOrRef | None = None
    max_replicas: IntOrRef | None = None
    max_restarts: IntOrRef | None = None
    metrics: list[dict[str, Any]] | None = Field(default=None, alias="Metrics")


class PaddleJob(_Kubeflow):
    """A ``PaddleJob`` (removed from Polyaxon in 2025)."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("master", "worker")
    MAIN_REPLICA: ClassVar[str] = "master"

    kind: Literal["paddlejob"] = "paddlejob"
    elastic_policy: PaddleElasticPolicy | None = None
    master: Templated[KFReplica] | None = None
    worker: Templated[KFReplica] | None = None


# --- Ray and Dask ----------------------------------------------------------------------------


class RayReplica(_PodSpec):
    """A Ray head or worker group."""

    replicas: PositiveIntOrRef | None = None
    min_replicas: NonNegativeIntOrRef | None = None
    max_replicas: PositiveIntOrRef | None = None
    ray_start_params: dict[StrictStr, StrictStr] | None = None


class AutoscalerOptions(BaseSpec):
    """Options of Ray's in-tree autoscaler."""

    upscaling_mode: Literal["Conservative", "Default", "Aggressive"] | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    resources: ResourceRequirements | None = None


class RayCluster(_Distributed):
    """A KubeRay cluster (``kind: raycluster``): one ``head`` plus named ``workers`` groups."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("head", "workers")
    MAIN_REPLICA: ClassVar[str] = "head"

    kind: Literal["raycluster"] = "raycluster"
    entrypoint: StrictStr | None = None
    runtime_env: Templated[dict[str, Any]] | None = None
    metadata: Templated[dict[StrictStr, StrictStr]] | None = None
    ray_version: StrictStr | None = None
    head: RayReplica | None = None
    workers: dict[StrictStr, RayReplica] | None = None
    enable_in_tree_autoscaling: BoolOrRef | None = None
    autoscaler_options: AutoscalerOptions | None = None


class DaskReplica(_PodSpec):
    """A Dask scheduler or worker group."""

    replicas: PositiveIntOrRef | None = None


class DaskCluster(_Distributed):
    """A Dask cluster (``kind: daskcluster``): ``scheduler`` and ``worker`` groups."""

    REPLICAS: ClassVar[tuple[str, ...]] = ("scheduler", "worker")
    MAIN_REPLICA: ClassVar[str] = "scheduler"

    kind: Literal["daskcluster"] = "daskcluster"
    scheduler: DaskReplica | None = None
    worker: DaskReplica | None = None
    min_replicas: NonNegativeIntOrRef | None = None
    max_replicas: PositiveIntOrRef | None = None


# --- registries ------------------------------------------------------------------------------

NonDagRuntime: TypeAlias = (
    Job
    | Service
    | NotifierJob
    | CleanerJob
    | TunerJob
    | TFJob
    | PytorchJob
    | MPIJob
    | MXJob
    | XGBoostJob
    | PaddleJob
    | RayCluster
    | DaskCluster
)
"""Every run model except ``Dag``; the ``Runtime`` union is these plus ``Dag``."""

NON_DAG_RUNTIMES: tuple[type[BaseSpec], ...] = get_args(NonDagRuntime)
"""The members of `NonDagRuntime`, in order."""

KUBEFLOW_KINDS = frozenset({"tfjob", "pytorchjob", "mpijob", "mxjob", "xgbjob", "paddlejob"})
DISTRIBUTED_KINDS = KUBEFLOW_KINDS | {"raycluster", "daskcluster"}

DISTRIBUTED_RUNTIMES: tuple[type[_Distributed], ...] = (
    TFJob,
    PytorchJob,
    MPIJob,
    MXJob,
    XGBoostJob,
    PaddleJob,
    RayCluster,
    DaskCluster,
)
"""The run models made of named replica groups."""

REPLICA_NAMES: dict[str, tuple[str, ...]] = {
    model.model_fields["kind"].default: tuple(_yaml_name(model, n) for n in model.REPLICAS)
    for model in DISTRIBUTED_RUNTIMES
}
"""The YAML names of the replica sections of each distributed kind."""

MAIN_REPLICAS: dict[str, str] = {
    model.model_fields["kind"].default: model.MAIN_REPLICA for model in DISTRIBUTED_RUNTIMES
}
"""The YAML name of the leading replica of each distributed kind (``MAIN_REPLICA``)."""

LAUNCHED_KINDS: dict[str, tuple[str, ...]] = {
    model.model_fields["kind"].default: model.LAUNCHERS
    for model in DISTRIBUTED_RUNTIMES
    if model.LAUNCHERS
}
"""The distributed kinds whose replicas are started by some of them, and those replicas'
YAML names (``LAUNCHERS``): only they run as processes of their own."""

AnyReplica = KFReplica | RayReplica | DaskReplica


def replica_fields(run: BaseSpec) -> dict[str, AnyReplica]:
    """The replica groups ``run`` sets, by YAML name, in declaration order.

    Ray worker groups are keyed ``workers.<group>``. Groups that are still a ``{{ template }}``
    are left out (they become real replicas once the templates are rendered). A run that is not
    distributed has none.
    """
    if not isinstance(run, _Distributed):
        return {}
    found: dict[str, AnyReplica] = {}
    for name in run.REPLICAS:
        value = getattr(run, name)
        if isinstance(value, dict):
            found.update({f"{_yaml_name(type(run), name)}.{k}": v for k, v in value.items()})
        elif isinstance(value, KFReplica | RayReplica | DaskReplica):
            found[_yaml_name(type(run), name)] = value
    return found
