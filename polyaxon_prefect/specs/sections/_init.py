"""``init``: what to put in place before the main container starts (spec 4.7)."""

from typing import ClassVar, Self

from pydantic import StrictStr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, is_template
from polyaxon_prefect.specs._templated import Templated
from polyaxon_prefect.specs.kubernetes._k8s import Container
from polyaxon_prefect.specs.params._types_objects import (
    ArtifactsType,
    DockerfileType,
    FileType,
    GitType,
    InitSource,
    PathItem,
    TensorboardType,
    check_pairs,
)

__all__ = ["INIT_SOURCES", "Init"]


class Init(BaseSpec):
    """One init step: a single source (git, artifacts, a file, ...), a bare ``connection``, or a
    custom ``container``.

    Only one source per entry, because each entry becomes one init container whose destination
    path is derived from that single source.
    """

    SETTINGS: ClassVar[frozenset[str]] = frozenset({"connection", "path", "container"})
    """The fields that say where or how, not what to fetch; every other field is a source
    (`INIT_SOURCES` is read from the fields, so a new source is one new field)."""

    artifacts: Templated[ArtifactsType] | None = None
    paths: Templated[list[PathItem] | StrictStr] | None = None
    git: Templated[GitType] | None = None
    dockerfile: Templated[DockerfileType] | None = None
    file: Templated[FileType] | None = None
    tensorboard: Templated[TensorboardType] | None = None
    lineage_ref: StrictStr | None = None
    model_ref: StrictStr | None = None
    artifact_ref: StrictStr | None = None
    connection: StrictStr | None = None
    path: StrictStr | None = None
    container: Templated[Container] | None = None

    @field_validator("paths")
    @classmethod
    def _paths_pairs(cls, value: object) -> object:
        return check_pairs(value)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        present = [name for name in INIT_SOURCES if getattr(self, name)]
        if len(present) > 1:
            names = ", ".join(_yaml_names(present))
            raise PydanticCustomError(
                "init_one_source",
                "an init entry may set only one of {sources}; got {names}",
                {
                    "sources": ", ".join(_yaml_names(INIT_SOURCES)),
                    "names": names,
                    "hint": "split it into one init entry per source",
                },
            )
        if isinstance(self.git, GitType) and not self.git.url and not self.connection:
            raise PydanticCustomError(
                "init_git_needs_url",
                "git init without a `url` needs a `connection` that provides the repository",
                {"hint": "set git.url, or name a git connection with `connection:`"},
            )
        return self

    @property
    def source(self) -> str | None:
        """Which source this entry fetches (python name), or None for connection/container-only."""
        return next((name for name in INIT_SOURCES if getattr(self, name)), None)

    def credential_urls(self) -> list[str]:
        """The URLs of this entry's source that may embed credentials (a git ``url``), for a
        run to mask: each source model names its own (`InitSource.CREDENTIAL_URLS`)."""
        value = getattr(self, self.source) if self.source is not None else None
        return value.credential_urls() if isinstance(value, InitSource) else []

    @property
    def has_template(self) -> bool:
        """Whether a whole sub-section is still a ``{{ template }}``."""
        return any(is_template(getattr(self, name)) for name in type(self).model_fields)


INIT_SOURCES: tuple[str, ...] = tuple(
    name for name in Init.model_fields if name not in Init.SETTINGS
)
"""The mutually exclusive things one init entry can fetch (python names), in field order."""


def _yaml_names(names: tuple[str, ...] | list[str]) -> list[str]:
    return [Init.model_fields[name].alias or name for name in names]
