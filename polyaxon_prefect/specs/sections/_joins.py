"""``joins``: feed an op with values gathered from the runs a query selects (spec 5.6)."""

from typing import Any

from pydantic import StrictStr, model_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec
from polyaxon_prefect.specs._or_ref import BoolOrRef
from polyaxon_prefect.specs._templated import NonNegativeIntOrRef, Templated
from polyaxon_prefect.specs.params._param_spec import FULL_FORM_KEYS

__all__ = ["Join", "JoinParam"]


class JoinParam(BaseSpec):
    """A param whose value is a reference path (``outputs.loss``, ``globals.uuid``,
    ``artifacts.x``, or an artifacts dict), resolved to the list of that value over the joined
    runs. ``ref`` is implied by the join, so it is not allowed."""

    value: Any = None
    context_only: BoolOrRef | None = None
    connection: StrictStr | None = None
    to_init: BoolOrRef | None = None
    to_env: StrictStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _full_form(cls, data: object) -> object:
        # Same short form as operation params: anything that is not a full-form dict is a value.
        if not isinstance(data, dict) or (data and not FULL_FORM_KEYS & data.keys()):
            return {"value": data}
        if "ref" in data:
            raise PydanticCustomError(
                "join_param_ref",
                "a join param cannot set `ref`: its values come from the runs the join selects",
                {"hint": "remove `ref` and keep the path in `value`, e.g. value: outputs.loss"},
            )
        return data


class Join(BaseSpec):
    """Select runs with a Polyaxon query (``query``, ``sort``, ``limit``, ``offset``) and expose
    some of their values as list params."""

    query: StrictStr
    sort: StrictStr | None = None
    limit: NonNegativeIntOrRef | None = None
    offset: NonNegativeIntOrRef | None = None
    ref: StrictStr | None = None
    params: Templated[dict[str, JoinParam]] | None = None
