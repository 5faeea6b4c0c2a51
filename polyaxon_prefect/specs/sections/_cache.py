"""``cache``: whether and how a run may reuse an earlier identical run (spec 8.3)."""

from typing import Literal

from pydantic import StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef
from polyaxon_prefect.specs._templated import NonNegativeIntOrRef

__all__ = ["Cache", "CacheSection"]

CacheSection = Literal["containers", "init", "connections"]


class Cache(BaseSpec):
    """Cache settings. ``disable: false`` turns the cache on explicitly; ``ttl`` is in seconds;
    ``io`` limits the key to some inputs; ``sections`` picks which run parts enter the key."""

    disable: BoolOrRef | None = None
    ttl: NonNegativeIntOrRef | None = None
    io: list[StrictStr] | None = None
    sections: list[CacheSection] | None = None

    @field_validator("io", "sections", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return split_csv(value)
