"""`Check`: the shared value types' validators run as pydantic's Before/AfterValidator would,
before or after the inner type, with the field's `ValidationInfo` when they ask for it."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import ValidationError, ValidationInfo

from polyaxon_prefect.specs._base import BaseSpec, Check, Ref
from polyaxon_prefect.specs._or_ref import IntOrRef


def _named(value: Any, info: ValidationInfo) -> Any:
    return f"{info.field_name}={value}"


def _doubled(value: Any) -> Any:
    return value * 2


class _Model(BaseSpec):
    before_info: Annotated[str, Check(_named, mode="before", info=True)] | None = None
    after_plain: Annotated[int, Check(_doubled, mode="after", info=False)] | None = None
    before_plain: Annotated[int, Check(_doubled, mode="before", info=False)] | None = None
    ref: Ref | None = None
    count: IntOrRef | None = None


def test_modes_and_info() -> None:
    model = _Model.model_validate(
        {"beforeInfo": 1, "afterPlain": "3", "beforePlain": "3", "ref": "{{ x }}", "count": "7"}
    )
    assert model.before_info == "before_info=1"
    assert model.after_plain == 6  # parsed as int first, then doubled
    assert model.before_plain == 33  # "3" * 2 = "33", then parsed
    assert (model.ref, model.count) == ("{{ x }}", 7)


def test_errors_read_as_before() -> None:
    with pytest.raises(ValidationError) as info:
        _Model.model_validate({"ref": "plain", "count": "many"})
    errors = {e["loc"][0]: e["msg"] for e in info.value.errors()}
    assert "expected a literal value or a `{{ template }}`" in errors["ref"]
    assert errors["count"].startswith("Value error, `count` must be an integer")
