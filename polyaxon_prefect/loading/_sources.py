"""Where each part of an assembled operation came from: the file, and the path in it, of every
region (the operation's own file, a referenced component, a preset, a ``-P`` flag), so that a
problem found on the merged data is reported at the line a user wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from polyaxon_prefect._source import Positions
from polyaxon_prefect.exceptions import Problem

__all__ = ["LegacyPositions", "Sources", "source_identity"]

PathT = tuple[str | int, ...]


@dataclass
class _Region:
    """Where a part of the assembled operation came from."""

    prefix: PathT  # path in the assembled operation
    positions: Positions
    source_prefix: PathT  # the same place inside its source document


@dataclass
class Sources:
    """Maps paths of the assembled operation back to files, lines and columns."""

    regions: list[_Region] = field(default_factory=list)

    def add(self, prefix: PathT, positions: Positions, source_prefix: PathT = ()) -> None:
        self.regions.append(_Region(prefix, positions, source_prefix))

    def has(self, path: PathT) -> bool:
        """Whether ``path`` of the assembled operation was written somewhere (a file, a flag)."""
        best = self.region_of(path)
        return best is not None and best.source_prefix + path[len(best.prefix) :] in (
            best.positions.by_path
        )

    def region_of(self, path: PathT) -> _Region | None:
        """The region ``path`` of the assembled operation came from (the most specific)."""
        best: _Region | None = None
        for region in self.regions:
            n = len(region.prefix)
            if path[:n] == region.prefix and (best is None or n > len(best.prefix)):
                best = region
        return best

    def alias(self, path: PathT, written: PathT) -> None:
        """Report ``path`` (and below) where ``written`` was written: a value moved by a
        shortcut."""
        region = self.region_of(written)
        if region is not None:
            source = region.source_prefix + written[len(region.prefix) :]
            self.add(path, region.positions, source)

    def locate(self, problem: Problem) -> Problem:
        best = self.region_of(problem.path)
        if best is None or problem.file is not None:
            return problem
        source_path = best.source_prefix + problem.path[len(best.prefix) :]
        line, column = best.positions.find(source_path)
        return problem.relocated(source_path, file=best.positions.file, line=line, column=column)


def source_identity(file: str | None, ref: object) -> str:
    """What makes two references the same source: the resolved file or URL."""
    if file and "://" not in str(file):
        return str(Path(file).resolve())
    return str(file or ref)


def _norm(key: str | int) -> str:
    return str(key).replace("_", "").replace("-", "").lower()


@dataclass
class LegacyPositions(Positions):
    """Positions for a legacy file converted to v1.1: converted paths do not exist in the
    source, so a path is located at the legacy key that matches its deepest keys
    (``environment.nodeSelector`` -> ``environment.node_selector``), else at the file's top."""

    @classmethod
    def of(cls, source: Positions) -> LegacyPositions:
        return cls(file=source.file, by_path=dict(source.by_path))

    def find(self, path: Sequence[str | int]) -> tuple[int | None, int | None]:
        keys = [_norm(k) for k in path if isinstance(k, str)]
        for size in range(len(keys), 0, -1):
            suffix = keys[-size:]
            for source_path, position in self.by_path.items():
                names = [_norm(k) for k in source_path if isinstance(k, str)]
                if names[-size:] == suffix:
                    return position
        return self.by_path.get((), (1, 1))
