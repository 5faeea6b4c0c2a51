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
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from polyaxon_prefect.specs._base import BaseSpec, split_csv

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

# Matrix entry keys, with the value keys their dict/list/string forms zip into.
SPACE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (required keys, optional keys)
    "range": (("start", "stop", "step"), ()),
    "linspace": (("start", "stop", "num"), ()),
    "logspace": (("start", "stop", "num"), ("base",)),
    "geomspace": (("start", "stop", "num"), ()),
    "uniform": (("low", "high"), ("size",)),
    "quniform": (("low", "high", "q"), ("size",)),
    "loguniform": (("low", "high"), ("size",)),
    "qloguniform": (("low", "high", "q"), ("size",)),
    "normal": (("loc", "scale"), ("size",)),
    "qnormal": (("loc", "scale", "q"), ("size",)),
    "lognormal": (("loc", "scale"), ("size",)),
    "qlognormal": (("loc", "scale", "q"), ("size",)),
}
RANGE_KEYS = ("range", "linspace", "logspace", "geomspace")
DISCRETE_KEYS = ("values", *RANGE_KEYS)
DISTRIBUTION_KEYS = ("pvalues", *(k for k in SPACE_KEYS if k not in RANGE_KEYS))
MATRIX_KEYS = (*DISCRETE_KEYS, *DISTRIBUTION_KEYS)


class LegacySpec(BaseSpec):
    """snake_case keys as written in v0.x files; unknown keys still rejected."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=None,
        frozen=True,
        protected_namespaces=(),
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _to_number(value: Any) -> int | float:
    if _is_number(value):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            return float(text)  # raises ValueError for non-numbers
    raise ValueError(f"expected a number, got {value!r}")


def space_items(kind: str, value: Any) -> dict[str, int | float]:
    """The named numbers of a ``range``/``uniform``/... value written as string, list or dict.

    Legacy accepted ``'1:10:2'``, ``[1, 10, 2]`` and ``{start: 1, stop: 10, step: 2}``; all three
    zip into the keys of ``SPACE_KEYS[kind]``. Raises ``ValueError`` with the accepted forms.
    """
    required, optional = SPACE_KEYS[kind]
    keys = required + optional
    forms = f"`{':'.join(required)}`, [{', '.join(required)}] or {{{', '.join(required)}}}"
    if isinstance(value, str):
        parts: list[Any] = value.split(":")
        named = None
    elif isinstance(value, list):
        parts = list(value)
        named = None
    elif isinstance(value, dict):
        missing = [k for k in required if k not in value]
        unknown = [k for k in value if k not in keys]
        if missing or unknown:
            raise ValueError(
                f"`{kind}` as a mapping needs the keys {', '.join(required)}"
                + (f" (optional: {', '.join(optional)})" if optional else "")
                + f"; got {', '.join(map(str, value)) or 'none'}"
            )
        named = value
        parts = [value[k] for k in keys if k in value]
    else:
        raise ValueError(f"`{kind}` expects {forms}, got {value!r}")
    if named is None and len(parts) not in (len(required), len(keys)):
        expected = str(len(required)) if not optional else f"{len(required)} or {len(keys)}"
        raise ValueError(
            f"`{kind}` expects {expected} numbers ({forms}), got {len(parts)}: {value!r}"
        )
    names = [k for k in keys if k in named] if named is not None else keys[: len(parts)]
    out: dict[str, int | float] = {}
    for name, part in zip(names, parts, strict=True):
        try:
            out[name] = _to_number(part)
        except ValueError:
            raise ValueError(f"`{kind}`: `{name}` must be a number, got {part!r}") from None
    if kind in RANGE_KEYS:
        if out[required[0]] >= out[required[1]]:
            raise ValueError(
                f"`{kind}`: `{required[1]}` must be greater than `{required[0]}`, "
                f"got {required[0]}={out[required[0]]} and {required[1]}={out[required[1]]}"
            )
        if out[required[2]] == 0:
            raise ValueError(f"`{kind}`: `{required[2]}` cannot be 0")
    return out


def _loose_range(value: Any) -> bool:
    """A ``range`` written as a plain list of 4+ numbers: legacy rejected it, but the intent
    (an explicit list of values) is unambiguous, so the converter reads it as ``values``."""
    return isinstance(value, list) and len(value) >= 4 and all(_is_number(v) for v in value)


class MatrixEntry(LegacySpec):
    """One hyper-parameter of ``hptuning.matrix``: exactly one of the value keys."""

    values: list[Any] | None = None
    pvalues: list[list[Any]] | None = None
    range: Any = None
    linspace: Any = None
    logspace: Any = None
    geomspace: Any = None
    uniform: Any = None
    quniform: Any = None
    loguniform: Any = None
    qloguniform: Any = None
    normal: Any = None
    qnormal: Any = None
    lognormal: Any = None
    qlognormal: Any = None

    @field_validator("values")
    @classmethod
    def _check_values(cls, value: list[Any] | None) -> list[Any] | None:
        if value is not None and not value:
            raise ValueError("`values` must list at least one value, got an empty list")
        return value

    @field_validator("pvalues")
    @classmethod
    def _check_pvalues(cls, value: list[list[Any]] | None) -> list[list[Any]] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("`pvalues` must list at least one [value, probability] pair")
        total = 0.0
        for item in value:
            if len(item) != 2 or not isinstance(item[1], float) or not 0 <= item[1] < 1:
                raise ValueError(
                    "each `pvalues` item must be [value, probability] with a float "
                    f"probability in [0, 1), got {item!r}"
                )
            total += item[1]
        if total > 1 + 1e-9:
            raise ValueError(f"`pvalues` probabilities must sum to at most 1, got {total:g}")
        return value

    @field_validator(*SPACE_KEYS)
    @classmethod
    def _check_space(cls, value: Any, info: Any) -> Any:
        if value is None:
            return value
        if info.field_name == "range" and _loose_range(value):
            return value
        space_items(info.field_name, value)
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> MatrixEntry:
        used = [key for key in MATRIX_KEYS if getattr(self, key) is not None]
        if len(used) != 1:
            got = ", ".join(used) if used else "none"
            raise ValueError(
                f"a matrix entry needs exactly one of {', '.join(MATRIX_KEYS)}; got {got}"
            )
        return self

    @property
    def key(self) -> str:
        return next(key for key in MATRIX_KEYS if getattr(self, key) is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.key)


# --- environment -------------------------------------------------------------------------


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


# --- hyper-parameter tuning --------------------------------------------------------------


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


Optimization = Annotated[Literal["maximize", "minimize"], BeforeValidator(_lower)]


class SearchMetric(LegacySpec):
    name: str
    optimization: Optimization = "maximize"


class NumExperiments(LegacySpec):
    n_experiments: int | None = Field(default=None, ge=1)


class HyperbandResource(LegacySpec):
    name: str
    type: Annotated[Literal["int", "float"], BeforeValidator(_lower)] = "float"


class Hyperband(LegacySpec):
    max_iter: int = Field(ge=1)
    eta: float = Field(ge=0)
    resource: HyperbandResource
    metric: SearchMetric
    resume: bool | None = None


class GaussianProcess(LegacySpec):
    kernel: Annotated[Literal["rbf", "matern"], BeforeValidator(_lower)] | None = None
    length_scale: float | None = None
    nu: float | None = None
    n_restarts_optimizer: int | None = Field(default=None, ge=0)


class UtilityFunction(LegacySpec):
    acquisition_function: Annotated[Literal["ucb", "ei", "poi"], BeforeValidator(_lower)] | None = (
        None
    )
    gaussian_process: GaussianProcess | None = None
    kappa: float | None = None
    eps: float | None = None
    n_warmup: int | None = Field(default=None, ge=1)
    n_iter: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _needs(self) -> UtilityFunction:
        function = self.acquisition_function or "ucb"
        if function == "ucb" and self.kappa is None:
            raise ValueError("the acquisition function `ucb` requires `kappa`")
        if function in ("ei", "poi") and self.eps is None:
            raise ValueError(f"the acquisition function `{function}` requires `eps`")
        return self


class BayesOpt(LegacySpec):
    n_initial_trials: int = Field(ge=1)
    n_iterations: int = Field(ge=1)
    metric: SearchMetric
    utility_function: UtilityFunction | None = None


class MedianPolicy(LegacySpec):
    kind: Literal["median"]
    evaluation_interval: int = Field(ge=1)


class AveragePolicy(LegacySpec):
    kind: Literal["average"]
    evaluation_interval: int = Field(ge=1)


class TruncationPolicy(LegacySpec):
    kind: Literal["truncation"]
    percent: float = Field(gt=0, lt=100)
    evaluation_interval: int = Field(ge=1)


StoppingPolicy = Annotated[
    MedianPolicy | AveragePolicy | TruncationPolicy, Field(discriminator="kind")
]


class EarlyStopping(LegacySpec):
    metric: str
    value: float | None = None
    optimization: Optimization = "maximize"
    policy: StoppingPolicy | None = None


class HPTuning(LegacySpec):
    seed: int | None = None
    concurrency: int | None = Field(default=None, ge=1)
    matrix: dict[str, MatrixEntry] | None = None
    grid_search: NumExperiments | None = None
    random_search: NumExperiments | None = None
    hyperband: Hyperband | None = None
    bo: BayesOpt | None = None
    early_stopping: list[EarlyStopping] | None = None


class Logging(LegacySpec):
    level: str | None = None
    formatter: str | None = None


class Settings(HPTuning):
    """The 0.1-0.2 name of ``hptuning`` (it also carried ``logging``)."""

    logging: Logging | None = None


# --- build and run -----------------------------------------------------------------------


EnvVars = list[Annotated[list[Any], Field(min_length=2, max_length=2)]]


def _scalar_ref(value: Any) -> Any:
    """A git ref written as a YAML number (``ref: 1``) is the ref ``"1"``, as v0.x read it."""
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
        if not self.image and not self.dockerfile:
            raise ValueError("`build` needs an `image` (or a `dockerfile`)")
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


def _cmd_form(value: Any) -> str:
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


def _version(value: Any) -> Any:
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
