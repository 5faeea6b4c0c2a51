"""``mount`` (local paths uploaded with the run) and ``template`` (not runnable as is)."""

from pydantic import AliasChoices, Field, StrictStr, field_validator, model_validator

from polyaxon_prefect.specs._base import BaseSpec, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef
from polyaxon_prefect.specs._templated import Templated

__all__ = ["Mount", "Template"]


class Mount(BaseSpec):
    """A local path made available to the run: ``"host:container"``, ``"path"`` (same path on
    both sides) or ``{from, to}`` (``pathFrom``/``pathTo`` also accepted)."""

    path_from: StrictStr = Field(
        validation_alias=AliasChoices("from", "pathFrom", "path_from"), serialization_alias="from"
    )
    path_to: StrictStr | None = Field(
        default=None,
        validation_alias=AliasChoices("to", "pathTo", "path_to"),
        serialization_alias="to",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: object) -> object:
        if isinstance(data, str):
            source, sep, target = data.partition(":")
            if not source or (sep and not target):
                raise ValueError(f"a mount string is `host_path[:container_path]`, got {data!r}")
            return {"from": source, "to": target or None}
        return data

    @property
    def destination(self) -> str:
        """Where the path lands in the run: ``to``, or the source path when ``to`` is unset."""
        return self.path_to or self.path_from


class Template(BaseSpec):
    """Marks a spec as a template: the CLI refuses to run it until ``fields`` are filled in."""

    enabled: BoolOrRef | None = None
    description: StrictStr | None = None
    fields: Templated[list[StrictStr]] | None = None

    @field_validator("fields", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return value if isinstance(value, str) and "{{" in value else split_csv(value)
