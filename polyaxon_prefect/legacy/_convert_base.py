"""What the legacy converter's parts share: the notes it takes, and value helpers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from polyaxon_prefect.exceptions import Problem, format_path
from polyaxon_prefect.legacy._schema import LegacyFile

__all__ = [
    "RESOURCE_NAMES",
    "ConverterBase",
    "Note",
    "Path",
    "common_type",
    "infer_type",
    "memory",
    "number",
]

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Note:
    """Something of the legacy file that was dropped or approximated, and where it was."""

    path: Path
    message: str

    def format(self) -> str:
        where = format_path(self.path) if self.path else "<file>"
        return f"{where}: {self.message}"


class ConverterBase:
    """A conversion of one validated legacy file: the notes on what changed, the problems."""

    def __init__(self, spec: LegacyFile, notes: list[Note]) -> None:
        self.spec = spec
        self.notes = notes
        self.problems: list[Problem] = []

    def note(self, path: Path, message: str) -> None:
        self.notes.append(Note(tuple(path), message))


def number(value: float | int) -> float | int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def memory(value: float | int) -> str:
    return f"{number(value)}Mi"


RESOURCE_NAMES = {
    "cpu": ("cpu", number),
    "memory": ("memory", memory),
    "gpu": ("nvidia.com/gpu", number),
    "tpu": ("cloud-tpus.google.com/v2", number),
}


_IO_TYPES = (bool, int, float, str, list, dict)  # bool first: to isinstance, a bool is an int


def infer_type(value: object) -> str | None:
    """The IO type of a legacy value: its Python type's name (``bool``, ``int``, ``float``,
    ``str``, ``list``, ``dict``), None for any other."""
    return next((kind.__name__ for kind in _IO_TYPES if isinstance(value, kind)), None)


def common_type(values: Sequence[Any]) -> str | None:
    types = {infer_type(v) for v in values}
    if len(types) == 1:
        return next(iter(types))
    if types == {"int", "float"}:
        return "float"
    return None
