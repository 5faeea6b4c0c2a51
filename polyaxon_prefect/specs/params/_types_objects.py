"""The structured IO value types (``git``, ``artifacts``, ``dockerfile``, ...) of spec 2.2.

They are values of inputs/params and also the payload of ``init`` entries, so they live apart
from both.
"""

from typing import Any, ClassVar

from pydantic import Field, StrictInt, StrictStr, field_validator

from polyaxon_prefect.specs._base import BaseSpec, is_template, split_csv
from polyaxon_prefect.specs._or_ref import BoolOrRef, IntOrRef
from polyaxon_prefect.specs._templated import Templated

__all__ = [
    "ArtifactsType",
    "DockerfileType",
    "EventType",
    "FileType",
    "GitType",
    "InitSource",
    "PathItem",
    "TensorboardType",
    "check_pairs",
]

PathItem = StrictStr | list[StrictStr]
"""A path, or a ``[source, destination]`` pair."""


def check_pairs(value: object) -> Any:
    """``[src, dst]`` items must have exactly two parts; anything else is a typo."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, list) and len(item) != 2:
                raise ValueError(
                    f"a path pair must be [source, destination] (2 items), got {item!r}"
                )
    return value


class InitSource(BaseSpec):
    """A structured value an ``init`` entry can fetch, and where it may carry credentials."""

    CREDENTIAL_URLS: ClassVar[tuple[str, ...]] = ()
    """The fields holding a URL that may embed credentials (``https://user:token@host/...``):
    what a run masks in its logs. A new source with a URL names its field here, and masking
    follows without a per-kind branch."""

    def credential_urls(self) -> list[str]:
        """The URLs set in `CREDENTIAL_URLS` fields (templates left out: not yet a URL)."""
        values = (getattr(self, name) for name in self.CREDENTIAL_URLS)
        return [value for value in values if isinstance(value, str) and not is_template(value)]


class GitType(InitSource):
    """A repository to clone: ``url`` (or a connection's), ``revision`` and extra ``flags``."""

    CREDENTIAL_URLS: ClassVar[tuple[str, ...]] = ("url",)

    url: StrictStr | None = None
    revision: StrictStr | None = None
    flags: Templated[list[StrictStr]] | None = None

    @field_validator("flags", mode="before")
    @classmethod
    def _flags_csv(cls, value: object) -> object:
        return value if is_template(value) else split_csv(value)


class ArtifactsType(InitSource):
    """Files and directories to pull from an artifacts store (``[src, dst]`` renames)."""

    files: Templated[list[PathItem]] | None = None
    dirs: Templated[list[PathItem]] | None = None
    workers: IntOrRef | None = None

    @field_validator("files", "dirs")
    @classmethod
    def _pairs(cls, value: object) -> object:
        return check_pairs(value)


class DockerfileType(InitSource):
    """A Dockerfile generated from a short description (used by build init containers)."""

    image: StrictStr
    env: Templated[dict[StrictStr, Any]] | None = None
    path: Templated[list[StrictStr]] | None = None
    # ``copy`` would shadow ``BaseModel.copy``.
    copy_: Templated[list[PathItem]] | None = Field(default=None, alias="copy")
    post_run_copy: Templated[list[PathItem]] | None = None
    run: Templated[list[StrictStr]] | None = None
    lang_env: StrictStr | None = None
    uid: IntOrRef | None = None
    gid: IntOrRef | None = None
    username: StrictStr | None = None
    filename: StrictStr | None = None
    workdir: StrictStr | None = None
    workdir_path: StrictStr | None = None
    shell: StrictStr | None = None

    @field_validator("copy_", "post_run_copy")
    @classmethod
    def _pairs(cls, value: object) -> object:
        return check_pairs(value)


class FileType(InitSource):
    """A file written from inline ``content`` (``chmod: +x`` for scripts)."""

    kind: StrictStr | None = None
    content: StrictStr
    filename: StrictStr | None = None
    chmod: StrictStr | None = None


class TensorboardType(InitSource):
    """A tensorboard over the logs of some runs; ``uuids``/``plugins`` accept a comma string."""

    port: Templated[StrictInt] | None = None
    uuids: Templated[list[StrictStr]] | None = None
    use_names: BoolOrRef | None = None
    path_prefix: StrictStr | None = None
    plugins: Templated[list[StrictStr]] | None = None

    @field_validator("uuids", "plugins", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return value if is_template(value) else split_csv(value)


class EventType(BaseSpec):
    """An event payload: its ``name`` and ``kind``."""

    name: StrictStr | None = None
    kind: StrictStr | None = None
