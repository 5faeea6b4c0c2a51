"""``Templated[T]``: a structured value or a ``{{ template }}``, with errors at the real path.

Polyaxon types most sections ``Union[T, RefField]``. Written as a plain ``T | Ref`` union, pydantic
reports a failure once per union member, with the member's name inside the error location
(``init.list[Init].0.git``, ``init.function-after[...]``), which then points nowhere in the YAML.
``Templated[T]`` accepts a template string as is and otherwise validates against ``T`` alone, so
errors keep the path the user wrote (``init.0.git.url``) and a bad string gets one sentence that
names both accepted forms. Scalars use the ``*OrRef`` types of ``_or_ref``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar, Union, get_args

from pydantic import GetCoreSchemaHandler, ValidationError, ValidationInfo
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError, core_schema

from polyaxon_prefect.specs._base import Check, Ref, is_template

__all__ = ["NonNegativeIntOrRef", "Templated"]

T = TypeVar("T")


class _TemplateOr:
    """Schema marker: a ``{{ }}`` string short-circuits validation of the wrapped type."""

    def __get_pydantic_core_schema__(
        self, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        members = [arg for arg in get_args(source) if arg is not str]
        inner_type: Any = members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007
        inner = handler.generate_schema(inner_type)

        def validate(
            value: object, validate_inner: core_schema.ValidatorFunctionWrapHandler
        ) -> object:
            if is_template(value):
                return value
            try:
                return validate_inner(value)
            except ValidationError as exc:
                if not isinstance(value, str):
                    raise
                first = exc.errors()[0]["msg"]
                message = (
                    f"{first[:1].lower()}{first[1:]}, or a `{{{{ template }}}}` string; "
                    f"got {value!r}"
                )
                raise PydanticCustomError(
                    "value_or_template", "{message}", {"message": message}
                ) from None

        def serialize(
            value: object, serialize_inner: core_schema.SerializerFunctionWrapHandler
        ) -> Any:
            return value if is_template(value) else serialize_inner(value)

        return core_schema.no_info_wrap_validator_function(
            validate,
            inner,
            serialization=core_schema.wrap_serializer_function_ser_schema(serialize, schema=inner),
        )


Templated = Annotated[Union[T, str], _TemplateOr()]  # noqa: UP007
"""``Templated[T]``: a ``T``, or a string holding a ``{{ template }}`` that is resolved later."""


def _non_negative_int_or_ref(value: object, info: ValidationInfo) -> object:
    if is_template(value):
        return value
    name = to_camel(info.field_name) if info.field_name else "value"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"`{name}` must be an integer or a `{{{{ template }}}}`, got {value!r}")
    if value < 0:
        raise ValueError(f"`{name}` must be 0 or more, got {value}")
    return value


NonNegativeIntOrRef = Annotated[
    int | Ref, Check(_non_negative_int_or_ref, mode="before", info=True)
]
"""An integer >= 0 (seconds, counts), or a ``{{ template }}``."""
