"""``hooks``: operations started after the main run is done (spec 4.10)."""

from typing import Any, Literal

from pydantic import StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef

__all__ = ["Hook", "HookTrigger"]

HookTrigger = Literal["failed", "stopped", "succeeded", "skipped", "upstream_failed", "done"]


class Hook(BaseSpec):
    """A hub component run when the main op ends with ``trigger`` (any end state if unset).

    ``params`` stays a raw mapping: it is validated against the hook component's inputs once that
    component is known, like an operation's params.
    """

    hub_ref: StrictStr
    connection: StrictStr | None = None
    trigger: HookTrigger | None = None
    conditions: StrictStr | None = None
    presets: list[StrictStr] | None = None
    queue: StrictStr | None = None
    namespace: StrictStr | None = None
    params: dict[str, Any] | None = None
    disable_defaults: BoolOrRef | None = None

    @field_validator("presets", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return split_csv(value)
