"""``grid``: every combination of the params, by index, never listed in full.

A grid of 10^7 points is a handful of numbers: its size is the product of the params' counts
(``range``/``linspace``/``logspace`` count from their numbers), and point ``i`` is ``i`` written
in the mixed radix of those counts (the last param varies fastest, as ``itertools.product``
orders them). ``compile`` and ``check`` size it without enumerating it, and a sweep takes its
trials by index (``IndexedKind``), so nothing at sweep start is proportional to the grid.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, overload

from polyaxon_prefect.search._kinds._kind_protocol import IndexedKind
from polyaxon_prefect.specs import GridSearch

__all__ = ["Grid", "GridPoints", "grid_points", "grid_suggestions"]

_LISTED_AXIS = 65_536
"""An axis with at most this many values is listed once (numpy's own values); a longer one
computes each value from its index (``HpParam.value_at``)."""


def _num_runs(grid: GridSearch) -> int | None:
    if not isinstance(grid.num_runs, int | None):
        raise ValueError(
            f"grid `numRuns` is a template ({grid.num_runs!r}): render it before planning"
        )
    return grid.num_runs


class _Axis:
    """One param's values: a list when short, ``value_at`` when long."""

    def __init__(self, hp: Any) -> None:
        self.hp = hp
        size = hp.length
        if size is None:
            hp.to_values()  # a template or a distribution: raises what enumerating would
        self.size: int = size
        self.values: list[Any] | None = hp.to_values() if self.size <= _LISTED_AXIS else None

    def __getitem__(self, index: int) -> Any:
        return self.values[index] if self.values is not None else self.hp.value_at(index)


class GridPoints(Sequence[dict[str, Any]]):
    """The points of a grid as a lazy sequence: ``len`` and ``points[i]`` in O(params)."""

    def __init__(self, grid: GridSearch) -> None:
        num_runs = _num_runs(grid)
        self.names = list(grid.params)
        self._axes = [_Axis(grid.params[name]) for name in self.names]
        self.size = math.prod(axis.size for axis in self._axes)
        """Every combination, before ``numRuns`` cuts it."""
        self._len = self.size if num_runs is None else min(self.size, num_runs)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"the grid has {self._len} points, no point {index}")
        values: list[Any] = []
        rest = index
        for axis in reversed(self._axes):
            rest, position = divmod(rest, axis.size)
            values.append(axis[position])
        return dict(zip(self.names, reversed(values), strict=True))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if all(axis.values is not None for axis in self._axes):
            columns = [axis.values or [] for axis in self._axes]
            combos = itertools.islice(itertools.product(*columns), self._len)
            return (dict(zip(self.names, combo, strict=True)) for combo in combos)
        return (self[i] for i in range(self._len))


def grid_points(grid: GridSearch) -> GridPoints:
    """The grid's points, lazily: ``len`` counts them, ``[i]`` computes one (``numRuns`` cut)."""
    return GridPoints(grid)


def grid_suggestions(grid: GridSearch) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as Polyaxon orders them, cut to ``numRuns``.

    ``itertools.product`` over the params in the order written: the last param varies fastest.
    A list: for a small grid; a large one is read through ``grid_points``.
    """
    return list(grid_points(grid))


class Grid(IndexedKind[GridSearch]):
    """The product of the params' values, cut to ``numRuns``."""

    name = "grid"
    points_are = "points"

    def points(self, matrix: GridSearch) -> Sequence[dict[str, Any]]:
        return grid_points(matrix)
