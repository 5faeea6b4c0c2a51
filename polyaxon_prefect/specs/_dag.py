"""The ``dag`` runtime (spec 5.1): operations, the components they share, pipeline settings.

Only structural checks live here. The graph (upstreams, cycles, unknown ops, refs) is built
from these immutable specs by `_dag_graph` and checked by `_validate_dag`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, StrictStr, field_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, is_template
from polyaxon_prefect.specs._or_ref import PositiveIntOrRef
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.kubernetes._k8s import Volume
from polyaxon_prefect.specs.matrix._early_stopping import EarlyStopping
from polyaxon_prefect.specs.sections._environment import Environment

if TYPE_CHECKING:  # set in ``_all`` once they exist (Dag <-> Operation <-> Component)
    from polyaxon_prefect.specs._component import Component
    from polyaxon_prefect.specs._operation import Operation

__all__ = ["Dag"]


class Dag(BaseSpec):
    """A pipeline: ``operations`` (each referencing a component) plus shared settings.

    ``environment`` is pushed to every child op; ``connections`` and ``volumes`` are accepted
    for compatibility (Polyaxon CE does not propagate them either).
    """

    kind: Literal["dag"] = "dag"
    # validated even when absent: Polyaxon refuses a dag without ops ("it has no ops")
    operations: Templated[list[Operation]] | None = Field(default=None, validate_default=True)
    components: Templated[list[Component]] | None = None
    environment: Environment | None = None
    connections: Templated[list[StrictStr]] | None = None
    volumes: list[Volume] | None = None
    concurrency: PositiveIntOrRef | None = None
    early_stopping: Templated[list[EarlyStopping]] | None = None

    @field_validator("operations")
    @classmethod
    def _has_operations(cls, operations: Any) -> Any:
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
    def _unique_component_names(cls, components: Any) -> Any:
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

    def get_component(self, name: str) -> Component | None:
        """The component a ``dagRef: name`` points to (``None`` if not defined here)."""
        for component in self.components if isinstance(self.components, list) else []:
            if component.name == name:
                return component
        return None

    @property
    def operation_list(self) -> list[Operation]:
        """``operations`` as a list (empty when unset or still a ``{{ }}`` template)."""
        return self.operations if isinstance(self.operations, list) else []
