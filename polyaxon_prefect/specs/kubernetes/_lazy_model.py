"""A field type that names a model by module and class, imported and built on first use.

Why: creating a pydantic model class and building its validator each cost about a millisecond,
and a Polyaxonfile uses few of the ~100 Kubernetes object models a container, volume or
affinity may nest (``check`` of a job whose container sets ``image`` and ``command`` needs none
of them). A field typed ``lazy_model(module, name)`` imports ``module`` and builds the model
only when a value for the field is validated, so a file pays for the objects it writes.

Errors keep their location (pydantic-core carries a nested `ValidationError`'s line errors
through the validator function) and dumps keep their settings (the value is serialized as the
model instance it is). ``resolve_model`` lets code that walks annotations (the "did you mean"
hints of `polyaxon_prefect._source`) reach the model behind the reference.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["LazyModel", "lazy_model"]


class LazyModel:
    """Schema marker: validate the value as ``module.name`` (a `BaseModel`), found on first use."""

    __slots__ = ("_model", "module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self._model: type[BaseModel] | None = None

    def resolve_model(self) -> type[BaseModel]:
        """The model class (its module imported now if it was not yet)."""
        if self._model is None:
            model = getattr(importlib.import_module(self.module), self.name)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise TypeError(f"{self.module}.{self.name} is not a pydantic model")
            self._model = model
        return self._model

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: object) -> object:
            return self.resolve_model().model_validate(value)

        return core_schema.no_info_plain_validator_function(validate)

    def __repr__(self) -> str:
        return f"LazyModel({self.module!r}, {self.name!r})"


def lazy_model(module: str, name: str) -> Any:
    """The annotation of a field holding a ``module.name`` model, imported on first use."""
    return Annotated[Any, LazyModel(module, name)]
