"""``mapping``: one trial per entry of ``values``, queued in order when the study is created."""

from __future__ import annotations

from typing import Any

from polyaxon_prefect.search._kinds._base import BaseKind, jsonable
from polyaxon_prefect.specs import Mapping

__all__ = ["MappingKind", "mapping_suggestions"]


def mapping_suggestions(mapping: Mapping) -> list[dict[str, Any]]:
    """One suggestion per entry of ``values``, each a fresh dict."""
    if isinstance(mapping.values, str):
        raise ValueError(
            f"mapping `values` is a template ({mapping.values!r}): render it before planning"
        )
    return [dict(item) for item in mapping.values]


class MappingKind(BaseKind[Mapping]):
    name = "mapping"

    def total(self, matrix: Mapping) -> int:
        return len(mapping_suggestions(matrix))

    def plan(self, matrix: Mapping) -> dict[str, Any]:
        suggestions = mapping_suggestions(matrix)
        return {"kind": self.name, "total": len(suggestions), "suggestions": jsonable(suggestions)}

    def initial_queue(self, matrix: Mapping, seed: int) -> list[dict[str, Any]]:
        return mapping_suggestions(matrix)
