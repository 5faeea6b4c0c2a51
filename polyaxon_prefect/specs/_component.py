"""``kind: component`` (spec 2): a reusable run definition with typed inputs and outputs.

Also the fields a component shares with an operation (``_ComponentFields``), and the ``run``
union over every runtime.
"""

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.client._names import NAME_CHARACTERS, NAME_REGEX

from ._base import BaseSpec, is_template, split_csv
from ._build import Build
from ._cache import Cache
from ._dag import Dag
from ._hook_spec import Hook
from ._io import IO
from ._mount import Mount, Template
from ._or_ref import BoolOrRef, FloatOrRef, as_number
from ._plugins import Plugins
from ._runs import NonDagRuntime
from ._templated import Templated
from ._termination import Termination

__all__ = ["NAME_CHARACTERS", "NAME_REGEX", "SCHEMA_VERSION", "Component", "Runtime"]

SCHEMA_VERSION = 1.1
"""The only ``version`` the modern format accepts."""

_HUB_NAME_REGEX = re.compile(r"^(?:[-a-zA-Z0-9_]+/)?[-a-zA-Z0-9_]+(?::[-a-zA-Z0-9_.]+)?\Z")

Runtime = Annotated[NonDagRuntime | Dag, Field(discriminator="kind")]
"""``run:``: one runtime, chosen by its ``kind`` (job, service, tfjob, ..., dag)."""


def check_version(value: Any, kind: str) -> Any:
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


def _csv_or_template(value: Any) -> Any:
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
    def _check_version(cls, value: Any) -> Any:
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
    def _split_csv(cls, value: Any) -> Any:
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
    def _no_build_with_dag(cls, run: Any, info: ValidationInfo) -> Any:
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
