"""``kind: operation`` (spec 3): one component reference plus params, patches and DAG helpers."""

from typing import Any, ClassVar, Literal, Self

from pydantic import StrictBool, StrictStr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import is_template
from polyaxon_prefect.specs._component import Component, _ComponentFields
from polyaxon_prefect.specs._dag import Dag
from polyaxon_prefect.specs._or_ref import BoolOrRef
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.matrix._matrix import Matrix
from polyaxon_prefect.specs.params._param_spec import Param, normalize_params
from polyaxon_prefect.specs.sections._build import PatchStrategy
from polyaxon_prefect.specs.sections._events import EventTrigger
from polyaxon_prefect.specs.sections._joins import Join
from polyaxon_prefect.specs.sections._schedules import Schedule
from polyaxon_prefect.specs.sections._triggers import TriggerPolicy

__all__ = ["REFERENCE_FIELDS", "Operation"]

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
    def _condition_alias(cls, data: Any) -> Any:
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
    def _normalize_params(cls, params: Any) -> Any:
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
