"""Pydantic models of the legacy (v0.x, ``version: 1``) Polyaxonfile.

The legacy format wrote its keys in snake_case (``n_workers``, ``node_selector``), so these models
switch the camelCase alias generator off while keeping ``extra="forbid"``: a typo such as
``n_worker`` is reported instead of silently dropped. The models check *structure* only; the
rules that depend on several sections at once (framework vs replicas, grid vs distributions) live
in ``_checks`` so their problems can point at the exact legacy key.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from polyaxon_prefect.legacy._schema_tuning import (
    DISCRETE_KEYS,
    DISTRIBUTION_KEYS,
    MATRIX_KEYS,
    SPACE_KEYS,
    EarlyStopping,
    HPTuning,
    Logging,
    MatrixEntry,
    Settings,
    space_items,
)
from polyaxon_prefect.legacy._spec import LegacySpec
from polyaxon_prefect.specs import split_csv

__all__ = [
    "DISCRETE_KEYS",
    "DISTRIBUTION_KEYS",
    "FRAMEWORK_BLOCKS",
    "LEGACY_KINDS",
    "MATRIX_KEYS",
    "SPACE_KEYS",
    "Build",
    "EarlyStopping",
    "Environment",
    "HPTuning",
    "IfCmd",
    "IfOperator",
    "LegacyFile",
    "MatrixEntry",
    "PodEnvironment",
    "Replicas",
    "Run",
    "Settings",
    "space_items",
]

from polyaxon_prefect.legacy._detect import LEGACY_KINDS

FRAMEWORK_BLOCKS = ("tensorflow", "mxnet", "pytorch", "horovod", "mpi")


class K8sResource(LegacySpec):
    """``{requests, limits}`` for one resource; old docs wrote ``request``/``limit``."""

    requests: float | None = Field(default=None, ge=0)
    limits: float | None = Field(default=None, ge=0)
    request: float | None = Field(default=None, ge=0)
    limit: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_spelling(self) -> K8sResource:
        if self.request is not None and self.requests is not None:
            raise ValueError("use either `requests` or `request`, not both")
        if self.limit is not None and self.limits is not None:
            raise ValueError("use either `limits` or `limit`, not both")
        return self

    @property
    def the_requests(self) -> float | None:
        return self.requests if self.requests is not None else self.request

    @property
    def the_limits(self) -> float | None:
        return self.limits if self.limits is not None else self.limit


class PodResources(LegacySpec):
    """Legacy resources: cpu in cores, memory in MB, gpu and tpu in devices."""

    cpu: K8sResource | None = None
    memory: K8sResource | None = None
    gpu: K8sResource | None = None
    tpu: K8sResource | None = None


class Persistence(LegacySpec):
    data: list[str] | None = None
    outputs: str | None = None


class OutputsRefs(LegacySpec):
    jobs: list[int | str] | None = None
    experiments: list[int | str] | None = None


StrList = Annotated[list[str], BeforeValidator(split_csv)]


class PodEnvironment(LegacySpec):
    """The pod settings shared by the main environment and every replica (``default_worker``,
    ``worker[i]``...)."""

    index: int | None = Field(default=None, ge=0)
    resources: PodResources | None = None
    labels: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    node_selector: dict[str, Any] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    service_account: str | None = None
    image_pull_secrets: StrList | None = None
    max_restarts: int | None = Field(default=None, ge=0)
    secret_refs: StrList | None = None
    config_map_refs: StrList | None = None
    configmap_refs: StrList | None = None
    data_refs: StrList | None = None
    artifact_refs: StrList | None = None
    outputs: OutputsRefs | None = None
    persistence: Persistence | None = None

    @model_validator(mode="after")
    def _exclusive(self) -> PodEnvironment:
        if self.config_map_refs is not None and self.configmap_refs is not None:
            raise ValueError(
                "`config_map_refs` and its deprecated spelling `configmap_refs` are both set; "
                "keep only `config_map_refs`"
            )
        if self.persistence is not None and (
            self.data_refs is not None or self.artifact_refs is not None
        ):
            raise ValueError("`persistence` cannot be combined with `data_refs` or `artifact_refs`")
        return self

    @property
    def all_config_map_refs(self) -> list[str] | None:
        return self.config_map_refs if self.config_map_refs is not None else self.configmap_refs


class Replicas(LegacySpec):
    """``environment.replicas`` (and the older ``environment.<framework>`` blocks)."""

    n_workers: int | None = Field(default=None, ge=0)
    n_ps: int | None = Field(default=None, ge=0)
    delay_workers_by_global_step: bool | None = None
    run_config: dict[str, Any] | None = None
    default_worker: PodEnvironment | None = None
    default_ps: PodEnvironment | None = None
    worker: list[PodEnvironment] | None = None
    ps: list[PodEnvironment] | None = None

    @field_validator("worker", "ps")
    @classmethod
    def _indexed(cls, value: list[PodEnvironment] | None) -> list[PodEnvironment] | None:
        if value is None:
            return value
        seen: set[int] = set()
        for position, item in enumerate(value):
            if item.index is None:
                raise ValueError(
                    f"item {position} has no `index`: per-replica settings must say which "
                    "replica (0-based) they apply to"
                )
            if item.index in seen:
                raise ValueError(f"index {item.index} is listed twice")
            seen.add(item.index)
        return value


class Environment(PodEnvironment):
    """The experiment environment: the main pod plus the distributed topology."""

    replicas: Replicas | None = None
    tensorflow: Replicas | None = None
    mxnet: Replicas | None = None
    pytorch: Replicas | None = None
    horovod: Replicas | None = None
    mpi: Replicas | None = None


# --- build and run -----------------------------------------------------------------------


EnvVars = list[Annotated[list[Any], Field(min_length=2, max_length=2)]]


def _scalar_ref(value: object) -> object:
    """A ref written as a YAML number (``ref: 1``) is the ref ``"1"``, as v0.x read it (a git
    ref beside an image; alone, polyaxon-schemas 0.5's reference to an earlier build job)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


class Build(LegacySpec):
    image: str | None = None
    dockerfile: str | None = None
    context: str | None = None
    build_steps: StrList | None = None
    env_vars: EnvVars | None = None
    lang_env: str | None = None
    commit: str | None = None
    branch: str | None = None
    ref: Annotated[str | None, BeforeValidator(_scalar_ref)] = None
    nocache: bool | None = None
    backend: str | None = None

    @model_validator(mode="after")
    def _source(self) -> Build:
        if self.image and self.dockerfile:
            raise ValueError("`build` takes either `image` or `dockerfile`, not both")
        if not self.image and not self.dockerfile and not self.ref:
            # polyaxon-schemas 0.5 takes exactly one of image, dockerfile or ref (a build job)
            raise ValueError("`build` needs an `image` (or a `dockerfile`, or a build `ref`)")
        refs = [k for k in ("commit", "branch", "ref") if getattr(self, k)]
        if len(refs) > 1:
            raise ValueError(f"`build` takes at most one of commit, branch, ref; got {refs}")
        return self


class IfOperator(LegacySpec):
    """``run.cmd: {if: {cond, do, else_do}}`` (schema 0.1-0.4): ``do`` when the Jinja condition
    over the params holds, else ``else_do`` (nothing when absent)."""

    cond: str
    do: str | list[str]
    else_do: str | list[str] | None = None

    @field_validator("cond")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the `if` condition is empty")
        return value


class IfCmd(LegacySpec):
    if_: IfOperator = Field(alias="if")


def _cmd_form(value: object) -> str:
    if isinstance(value, dict | IfCmd):
        return "operator"
    return "list" if isinstance(value, list) else "text"


# One form per shape, so a bad operator is reported once (not once per union member).
Cmd = Annotated[
    Annotated[str, Tag("text")]
    | Annotated[list[str], Tag("list")]
    | Annotated[IfCmd, Tag("operator")],
    Discriminator(_cmd_form),
]


class Run(LegacySpec):
    """``run``; before 0.3 it also carried the image and build steps."""

    cmd: Cmd
    image: str | None = None
    steps: StrList | None = None
    build_steps: StrList | None = None
    env_vars: EnvVars | None = None

    @field_validator("cmd")
    @classmethod
    def _non_empty(cls, value: str | list[str] | IfCmd) -> str | list[str] | IfCmd:
        if (isinstance(value, str) and not value.strip()) or (
            isinstance(value, list) and not value
        ):
            raise ValueError("`run.cmd` is empty")
        return value


class LegacyIO(LegacySpec):
    name: str
    description: str | None = None
    type: str | None = None
    value: Any = None
    default: Any = None
    is_optional: bool | None = None
    is_list: bool | None = None
    is_flag: bool | None = None
    options: list[Any] | None = None


def _version(value: object) -> object:
    if value in (1, "1", "1.0") and not isinstance(value, bool):
        return 1
    raise ValueError(f"a legacy Polyaxonfile has `version: 1`, got {value!r}")


class LegacyFile(LegacySpec):
    """A whole v0.x Polyaxonfile (every kind; the per-kind rules are in ``_checks``)."""

    version: Annotated[int, BeforeValidator(_version)]
    kind: Literal["experiment", "group", "job", "notebook", "tensorboard", "build", "pipeline"]
    name: str | None = None
    description: str | None = None
    logging: Logging | None = None
    tags: StrList | None = None
    inputs: list[LegacyIO] | None = None
    outputs: list[LegacyIO] | None = None
    declarations: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    backend: Literal["native", "kubeflow", "mpi", "other", "external"] | None = None
    framework: str | None = None
    environment: Environment | None = None
    hptuning: HPTuning | None = None
    settings: Settings | None = None
    build: Build | None = None
    run: Run | None = None
