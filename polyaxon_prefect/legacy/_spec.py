"""The base of the legacy models: snake_case keys, unknown keys still refused."""

from __future__ import annotations

from pydantic import ConfigDict

from polyaxon_prefect.specs import BaseSpec

__all__ = ["LegacySpec"]


class LegacySpec(BaseSpec):
    """snake_case keys as written in v0.x files; unknown keys still rejected."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=None,
        frozen=True,
        protected_namespaces=(),
    )
