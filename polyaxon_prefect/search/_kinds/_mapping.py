"""``mapping``: one trial per entry of ``values``, taken by index as the sweep asks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyaxon_prefect.search._kinds._kind_protocol import IndexedKind
from polyaxon_prefect.specs import Mapping

__all__ = ["MappingKind", "mapping_suggestions"]


class _Entries(Sequence[dict[str, Any]]):
    """The entries of ``values``, each read as a fresh dict (no copy of the whole list)."""

    def __init__(self, values: list[Any]) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [dict(item) for item in self._values[index]]
        return dict(self._values[index])


def _entries(mapping: Mapping) -> _Entries:
    if isinstance(mapping.values, str):
        raise ValueError(
            f"mapping `values` is a template ({mapping.values!r}): render it before planning"
        )
    return _Entries(mapping.values)


def mapping_suggestions(mapping: Mapping) -> list[dict[str, Any]]:
    """One suggestion per entry of ``values``, each a fresh dict."""
    return list(_entries(mapping))


class MappingKind(IndexedKind[Mapping]):
    name = "mapping"
    points_are = "entries"

    def points(self, matrix: Mapping) -> Sequence[dict[str, Any]]:
        return _entries(matrix)
