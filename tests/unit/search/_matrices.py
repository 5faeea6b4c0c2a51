"""Matrix models for the study tests, built from YAML-shaped dicts like a Polyaxonfile."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from polyaxon_prefect.specs.matrix._matrix import Matrix

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Matrix)


def matrix(data: dict[str, Any]) -> Any:
    return _ADAPTER.validate_python(data)
