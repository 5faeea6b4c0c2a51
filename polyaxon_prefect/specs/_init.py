"""``init``: what to put in place before the main container starts (spec 4.7)."""

from typing import Any, Self

from pydantic import StrictStr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ._base import BaseSpec, is_template
from ._k8s import Container
from ._templated import Templated
from ._types_objects import (
    ArtifactsType,
    DockerfileType,
    FileType,
    GitType,
    PathItem,
    TensorboardType,
    check_pairs,
)

__all__ = ["INIT_SOURCES", "Init"]

INIT_SOURCES = (
    "artifacts",
    "paths",
    "git",
    "dockerfile",
    "file",
    "tensorboard",
    "lineage_ref",
    "model_ref",
    "artifact_ref",
)
"""The mutually exclusive things one init entry can fetch (python names)."""


class Init(BaseSpec):
    """One init step: a single source (git, artifacts, a file, ...), a bare ``connection``, or a
    custom ``container``.

    Only one source per entry, because each entry becomes one init container whose destination
    path is derived from that single source.
    """

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
    def _paths_pairs(cls, value: Any) -> Any:
        return check_pairs(value)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        present = [name for name in INIT_SOURCES if getattr(self, name)]
        if len(present) > 1:
            names = ", ".join(type(self).model_fields[name].alias or name for name in present)
            raise PydanticCustomError(
                "init_one_source",
                "an init entry may set only one of artifacts, paths, git, dockerfile, file, "
                "tensorboard, lineageRef, modelRef, artifactRef; got {names}",
                {"names": names, "hint": "split it into one init entry per source"},
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

    @property
    def has_template(self) -> bool:
        """Whether a whole sub-section is still a ``{{ template }}``."""
        return any(is_template(getattr(self, name)) for name in type(self).model_fields)
