"""The base model every spec class shares, and the ``{{ template }}`` value type."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema

__all__ = ["PARAM_REGEX", "BaseSpec", "Check", "Ref", "is_template", "split_csv"]

# Polyaxon's RefField: a string holding a Jinja expression, resolved later.
PARAM_REGEX = re.compile(r"{{\s*(.+?)\s*}}", re.S)


def is_template(value: object) -> bool:
    """Whether ``value`` is a string that holds a ``{{ }}``/``{% %}`` template."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _check_template(value: str) -> str:
    if not is_template(value):
        raise ValueError(f"expected a literal value or a `{{{{ template }}}}`, got {value!r}")
    return value


class Check:
    """``BeforeValidator``/``AfterValidator`` for the value types many fields share (`Ref`, the
    ``*OrRef`` scalars), told whether the function takes a `ValidationInfo` (``info``).

    pydantic's validators inspect the function's signature at every field that uses them: about
    280 times while `Operation`'s validator is built, a tenth of that build and so of ``check``.
    The schema is the one those validators build, so behaviour and messages are the same.
    """

    __slots__ = ("func", "info", "mode")

    def __init__(
        self, func: Callable[..., Any], *, mode: Literal["before", "after"], info: bool
    ) -> None:
        self.func = func
        self.mode = mode
        self.info = info

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        schema = handler(source)
        if self.mode == "before":
            if self.info:
                return core_schema.with_info_before_validator_function(self.func, schema)
            return core_schema.no_info_before_validator_function(self.func, schema)
        if self.info:
            return core_schema.with_info_after_validator_function(self.func, schema)
        return core_schema.no_info_after_validator_function(self.func, schema)


Ref = Annotated[str, Check(_check_template, mode="after", info=False)]
"""A field that may hold ``"{{ expr }}"`` instead of a literal, like Polyaxon's ``RefField``."""


def split_csv(value: object) -> Any:
    """Polyaxon accepts ``tags: a, b`` as well as ``tags: [a, b]``."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class BaseSpec(BaseModel):
    """Camel-case YAML, snake_case Python, unknown keys rejected, values immutable.

    Frozen because a compiled spec is shared by many trial and op runs: changes go through
    ``model_copy(update=...)`` so nothing is mutated behind another run's back.

    Built on first use (``defer_build``): eagerly, each of the ~200 spec classes would build
    its own validator at import, each embedding its nested models again, while ``check``
    validates one `Operation` (whose validator holds the whole tree): deferring takes a large
    share off importing `specs`. For the same reason the modules of models do without
    ``from __future__ import annotations``: pydantic would evaluate each string annotation
    again at every `check`; only a module that needs a forward reference keeps it.
    """

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        frozen=True,
        validate_default=False,
        protected_namespaces=(),
        defer_build=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The YAML-shaped (camelCase) dict of the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
