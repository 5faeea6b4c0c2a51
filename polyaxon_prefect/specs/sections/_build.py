"""``build``: an image build that must succeed before the run starts (spec 4.11)."""

from typing import Any, Literal

from pydantic import StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec, split_csv
from polyaxon_prefect.specs.sections._cache import Cache

__all__ = ["Build", "PatchStrategy"]

PatchStrategy = Literal["replace", "isnull", "post_merge", "pre_merge"]


class Build(BaseSpec):
    """A builder hub component (e.g. ``kaniko``) whose output image replaces the run's image.

    ``params`` and ``runPatch`` stay raw: they are checked against the builder component, which
    is only known once its hub reference is resolved.
    """

    hub_ref: StrictStr
    connection: StrictStr | None = None
    presets: list[StrictStr] | None = None
    queue: StrictStr | None = None
    namespace: StrictStr | None = None
    cache: Cache | None = None
    params: dict[str, Any] | None = None
    run_patch: dict[str, Any] | None = None
    patch_strategy: PatchStrategy | None = None

    @field_validator("presets", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return split_csv(value)
