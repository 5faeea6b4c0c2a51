"""The base model every spec class shares, and the ``{{ template }}`` value type."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["PARAM_REGEX", "BaseSpec", "Ref", "is_template", "split_csv"]

# Polyaxon's RefField: a string holding a Jinja expression, resolved later.
PARAM_REGEX = re.compile(r"{{\s*(.+?)\s*}}", re.S)


def is_template(value: Any) -> bool:
    """Whether ``value`` is a string that holds a ``{{ }}``/``{% %}`` template."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _check_template(value: str) -> str:
    if not is_template(value):
        raise ValueError(f"expected a literal value or a `{{{{ template }}}}`, got {value!r}")
    return value


Ref = Annotated[str, AfterValidator(_check_template)]
"""A field that may hold ``"{{ expr }}"`` instead of a literal, like Polyaxon's ``RefField``."""


def split_csv(value: Any) -> Any:
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
