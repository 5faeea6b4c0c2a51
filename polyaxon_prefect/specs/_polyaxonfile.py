"""The tree of a Polyaxonfile: ``kind: component`` (spec 2), ``kind: operation`` (spec 3) and
the ``dag`` runtime (spec 5.1) that holds operations and components again.

The three models refer to each other (a component's ``run`` may be a DAG, a DAG's operations
hold components), so they live in one module: `Dag` comes first and names the two later classes
as strings, resolved when the tree is first built. Also the fields a component shares with an
operation (``_ComponentFields``) and the ``run`` union over every runtime. Only structural
checks live here: a DAG's graph is built by `dag._dag_graph` and checked by `dag._validate_dag`.
"""

import re
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    Field,
    StrictBool,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from polyaxon_prefect.client.run_files._name_rule import NAME_CHARACTERS, NAME_REGEX
from polyaxon_prefect.specs._base import BaseSpec, is_template, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef, FloatOrRef, PositiveIntOrRef, as_number
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.kubernetes._k8s import Volume
from polyaxon_prefect.specs.matrix._early_stopping import EarlyStopping
from polyaxon_prefect.specs.matrix._matrix import Matrix
from polyaxon_prefect.specs.params._io import IO
from polyaxon_prefect.specs.params._param_spec import Param, normalize_params
from polyaxon_prefect.specs.sections._build import Build, PatchStrategy
from polyaxon_prefect.specs.sections._cache import Cache
from polyaxon_prefect.specs.sections._environment import Environment
from polyaxon_prefect.specs.sections._events import EventTrigger
from polyaxon_prefect.specs.sections._hook_spec import Hook
from polyaxon_prefect.specs.sections._joins import Join
from polyaxon_prefect.specs.sections._mount import Mount, Template
from polyaxon_prefect.specs.sections._plugins import Plugins
from polyaxon_prefect.specs.sections._run_spec import NonDagRuntime
from polyaxon_prefect.specs.sections._schedules import Schedule
from polyaxon_prefect.specs.sections._termination import Termination
from polyaxon_prefect.specs.sections._triggers import TriggerPolicy

__all__ = [
    "NAME_CHARACTERS",
    "NAME_REGEX",
    "REFERENCE_FIELDS",
    "SCHEMA_VERSION",
    "Component",
    "Dag",
    "Operation",
    "Runtime",
]

SCHEMA_VERSION = 1.1
"""The only ``version`` the modern format accepts."""

_HUB_NAME_REGEX = re.compile(r"^(?:[-a-zA-Z0-9_]+/)?[-a-zA-Z0-9_]+(?::[-a-zA-Z0-9_.]+)?\Z")


# -- the dag runtime: its operations and components are the classes below


class Dag(BaseSpec):
    """A pipeline: ``operations`` (each referencing a component) plus shared settings.

    ``environment`` is pushed to every child op; ``connections`` and ``volumes`` are accepted
    for compatibility (Polyaxon CE does not propagate them either).
    """

    kind: Literal["dag"] = "dag"
    # validated even when absent: Polyaxon refuses a dag without ops ("it has no ops")
    operations: "Templated[list[Operation]] | None" = Field(default=None, validate_default=True)
    components: "Templated[list[Component]] | None" = None
    environment: Environment | None = None
    connections: Templated[list[StrictStr]] | None = None
    volumes: list[Volume] | None = None
    concurrency: PositiveIntOrRef | None = None
    early_stopping: Templated[list[EarlyStopping]] | None = None

    @field_validator("operations")
    @classmethod
    def _has_operations(cls, operations: object) -> object:
        if operations is None:
            raise PydanticCustomError(
                "dag_no_operations",
                "a dag needs at least one operation, it has no `operations`",
                {"hint": "add `operations:`, each with a name and a component reference"},
            )
        if isinstance(operations, list) and not operations:
            raise PydanticCustomError(
                "dag_no_operations",
                "a dag needs at least one operation, `operations` is empty",
                {"hint": "add operations, each with a name and a component reference"},
            )
        for index, operation in enumerate(operations if isinstance(operations, list) else []):
            if getattr(operation, "name", None) is None:
                raise PydanticCustomError(
                    "dag_operation_name",
                    "operation {index} of the dag has no `name`; ops are referenced by name",
                    {"index": index, "hint": "add `name: ...` to the operation"},
                )
        return operations

    @field_validator("components")
    @classmethod
    def _unique_component_names(cls, components: object) -> object:
        if not isinstance(components, list):
            return components
        seen: set[str] = set()
        for component in components:
            name = getattr(component, "name", None)
            if name is None or is_template(name):
                continue
            if name in seen:
                raise PydanticCustomError(
                    "dag_duplicate_component",
                    "the dag has several components named `{name}`; `dagRef` needs unique names",
                    {"name": name, "hint": "rename one of them"},
                )
            seen.add(name)
        return components

    def get_component(self, name: str) -> "Component | None":
        """The component a ``dagRef: name`` points to (``None`` if not defined here)."""
        for component in self.components if isinstance(self.components, list) else []:
            if component.name == name:
                return component
        return None

    @property
    def operation_list(self) -> "list[Operation]":
        """``operations`` as a list (empty when unset or still a ``{{ }}`` template)."""
        return self.operations if isinstance(self.operations, list) else []


Runtime = Annotated[NonDagRuntime | Dag, Field(discriminator="kind")]
"""``run:``: one runtime, chosen by its ``kind`` (job, service, tfjob, ..., dag)."""


def check_version(value: object, kind: str) -> Any:
    """``1.1`` (or ``"1.1"``); ``1`` gets a pointed message, anything else a plain one."""
    if value is None:
        return value
    number = as_number(value)
    if number == SCHEMA_VERSION:
        return SCHEMA_VERSION
    if number == 1.0:
        raise PydanticCustomError(
            "version_legacy",
            "Polyaxonfile version 1 with kind {kind} is the v1.0 format: set `version: 1.1`",
            {"kind": kind, "hint": "the v1.0 and v1.1 schemas are the same for most files"},
        )
    raise PydanticCustomError(
        "version_unsupported",
        "unsupported Polyaxonfile version {value}, only `version: 1.1` is supported",
        {"value": repr(value), "hint": "set `version: 1.1`"},
    )


def _csv_or_template(value: object) -> Any:
    return value if is_template(value) else split_csv(value)


class _ComponentFields(BaseSpec):
    """Fields an operation shares with a component (the operation's values win)."""

    _KIND: ClassVar[str] = "component"
    _HUB_NAMES: ClassVar[bool] = False

    version: float | None = None
    name: StrictStr | None = None
    description: StrictStr | None = None
    tags: Templated[list[StrictStr]] | None = None
    presets: Templated[list[StrictStr]] | None = None
    queue: StrictStr | None = None
    namespace: StrictStr | None = None
    cache: Templated[Cache] | None = None
    termination: Templated[Termination] | None = None
    plugins: Templated[Plugins] | None = None
    build: Templated[Build] | None = None
    hooks: Templated[list[Hook]] | None = None
    is_approved: BoolOrRef | None = None
    cost: FloatOrRef | None = None
    mount: list[Mount] | None = None
    template: Template | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _check_version(cls, value: object) -> object:
        return check_version(value, cls._KIND)

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str | None) -> str | None:
        if name is None or is_template(name) or NAME_REGEX.match(name):
            return name
        if cls._HUB_NAMES and _HUB_NAME_REGEX.match(name):
            return name
        forms = NAME_CHARACTERS
        if cls._HUB_NAMES:
            forms += " (or a hub name `slug:tag`, `org/slug[:tag]`)"
        raise PydanticCustomError(
            "name",
            "{kind} names may only use {forms}, got {name}",
            {"kind": cls._KIND, "forms": forms, "name": repr(name)},
        )

    @field_validator("tags", "presets", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return _csv_or_template(value)


class Component(_ComponentFields):
    """A runnable definition: ``inputs``/``outputs`` and the ``run`` section."""

    _KIND: ClassVar[str] = "component"
    _HUB_NAMES: ClassVar[bool] = True

    kind: Literal["component"] = "component"
    inputs: list[IO] | None = None
    outputs: list[IO] | None = None
    run: Runtime

    @field_validator("inputs", "outputs")
    @classmethod
    def _unique_io_names(cls, ios: list[IO] | None, info: ValidationInfo) -> list[IO] | None:
        earlier = info.data.get("inputs") or [] if info.field_name == "outputs" else []
        seen: set[str] = set()
        for io in [*earlier, *(ios or [])]:
            if io.name in seen:
                raise PydanticCustomError(
                    "io_duplicate",
                    "the name `{name}` is used by more than one input/output",
                    {"name": io.name, "hint": "each input and output needs its own name"},
                )
            seen.add(io.name)
        return ios

    @field_validator("run")
    @classmethod
    def _no_build_with_dag(cls, run: object, info: ValidationInfo) -> object:
        if isinstance(run, Dag) and info.data.get("build") is not None:
            raise PydanticCustomError(
                "dag_build",
                "operations with dag runtime do not support the `build` section",
                {"hint": "move `build` to the operations inside the dag"},
            )
        return run

    @property
    def ios(self) -> list[IO]:
        """Inputs then outputs."""
        return [*(self.inputs or []), *(self.outputs or [])]

    def get_io(self, name: str) -> IO | None:
        for io in self.ios:
            if io.name == name:
                return io
        return None

    @property
    def is_dag(self) -> bool:
        return isinstance(self.run, Dag)

    @property
    def hub_name(self) -> str | None:
        """The name without a hub ``:tag``."""
        return self.name.split(":", 1)[0] if self.name else None


REFERENCE_FIELDS = ("hub_ref", "dag_ref", "url_ref", "path_ref")
"""The string component references; an inline ``component`` is the fifth kind."""

_YAML_NAMES = {
    "hub_ref": "hubRef",
    "dag_ref": "dagRef",
    "url_ref": "urlRef",
    "path_ref": "pathRef",
    "component": "component",
}


class Operation(_ComponentFields):
    """Run one component (``hubRef``/``dagRef``/``urlRef``/``pathRef`` or inline ``component``).

    ``conditions`` is also read from ``condition`` (Polyaxon only knows the plural; older docs
    and examples use the singular). A preset (``isPreset: true``) is a partial operation merged
    into another one, so it needs no reference.
    """

    _KIND: ClassVar[str] = "operation"

    kind: Literal["operation"] = "operation"
    params: dict[StrictStr, Param] | None = None
    hub_ref: StrictStr | None = None
    dag_ref: StrictStr | None = None
    url_ref: StrictStr | None = None
    path_ref: StrictStr | None = None
    component: Component | None = None
    patch_strategy: PatchStrategy | None = None
    is_preset: StrictBool | None = None
    run_patch: dict[StrictStr, Any] | None = None
    schedule: Schedule | None = None
    events: Templated[list[EventTrigger]] | None = None
    matrix: Matrix | None = None
    joins: Templated[list[Join]] | None = None
    dependencies: Templated[list[StrictStr]] | None = None
    trigger: Templated[TriggerPolicy] | None = None
    conditions: StrictStr | None = None
    skip_on_upstream_skip: BoolOrRef | None = None

    @model_validator(mode="before")
    @classmethod
    def _condition_alias(cls, data: object) -> object:
        if not isinstance(data, dict) or "condition" not in data:
            return data
        if "conditions" in data:
            raise PydanticCustomError(
                "conditions_twice",
                "`condition` and `conditions` are the same setting, give only one",
                {"hint": "keep `conditions` (Polyaxon's spelling)"},
            )
        data = dict(data)
        data["conditions"] = data.pop("condition")
        return data

    @field_validator("params", mode="before")
    @classmethod
    def _normalize_params(cls, params: object) -> object:
        return normalize_params(params)

    @model_validator(mode="after")
    def _one_reference(self) -> Self:
        if self.is_preset:
            return self
        found = [_YAML_NAMES[f] for f in REFERENCE_FIELDS if getattr(self, f)]
        # An inline component next to one string reference is that reference, resolved.
        if not found and self.component is not None:
            found = ["component"]
        if len(found) != 1:
            what = "none" if not found else f"{len(found)}: " + ", ".join(found)
            raise PydanticCustomError(
                "operation_reference",
                "an operation needs exactly one component reference (hubRef, dagRef, urlRef, "
                "pathRef or an inline component), found {what}",
                {
                    "what": what,
                    "hint": "keep one reference, or mark a partial file with `isPreset: true`",
                },
            )
        return self

    @model_validator(mode="after")
    def _no_build_with_dag(self) -> Self:
        if (
            self.build is not None
            and self.component is not None
            and isinstance(self.component.run, Dag)
        ):
            raise PydanticCustomError(
                "dag_build",
                "operations with dag runtime do not support the `build` section",
                {"hint": "move `build` to the operations inside the dag"},
            )
        return self

    @property
    def reference_kind(self) -> str | None:
        """Which reference the op uses (``"dagRef"``, ``"component"``...), ``None`` if none."""
        for field in REFERENCE_FIELDS:
            if getattr(self, field):
                return _YAML_NAMES[field]
        return "component" if self.component is not None else None

    @property
    def param_map(self) -> dict[str, Param]:
        """``params`` as a dict (empty when unset)."""
        return dict(self.params or {})

    @property
    def trigger_policy(self) -> TriggerPolicy:
        """The trigger, defaulting to ``all_succeeded`` (a template is not resolved here)."""
        if self.trigger is None or is_template(self.trigger):
            return TriggerPolicy.ALL_SUCCEEDED
        return TriggerPolicy(self.trigger)
