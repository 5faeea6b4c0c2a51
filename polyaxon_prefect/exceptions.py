"""Errors and warnings raised by polyaxon_prefect."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "DagError",
    "HintedError",
    "PolyaxonPrefectError",
    "PolyaxonfileError",
    "Problem",
    "UnsupportedFeatureError",
    "WriteFailedError",
    "unwritable_study",
    "write_failure",
]

NO_VALUE: Any = object()


def format_path(path: Sequence[str | int]) -> str:
    """Render a field path the way users write it: ``run.container.args[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a Polyaxonfile, located as precisely as the source allows.

    ``rule`` names the check that failed (a pydantic error type such as ``extra_forbidden`` or one
    of ours such as ``dag_cycle``) so tools can match on it; ``message`` is the sentence for people.
    ``severity`` is ``error`` (the file is refused) or ``warning`` (it is accepted, but something in
    it is ignored or surprising).
    """

    message: str
    rule: str = "invalid"
    path: tuple[str | int, ...] = ()
    file: str | None = None
    line: int | None = None
    column: int | None = None
    value: Any = field(default=NO_VALUE, compare=False)
    hint: str | None = None
    severity: str = "error"

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    @property
    def has_value(self) -> bool:
        return self.value is not NO_VALUE

    def format(self) -> str:
        """``file:line:col: path: message (hint)``, the one-line form ``check`` prints."""
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = where + ": "
        if self.path:
            text += format_path(self.path) + ": "
        if self.is_warning:
            text += "warning: "
        text += self.message
        if self.hint:
            text += f"; hint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": format_path(self.path),
            "rule": self.rule,
            "message": self.message,
            "hint": self.hint,
        }
        if self.has_value:
            data["value"] = _jsonable(self.value)
        if self.is_warning:
            data["severity"] = self.severity
        return data

    def located(
        self, *, file: str | None = None, line: int | None = None, column: int | None = None
    ) -> Problem:
        """A copy with the source position filled in where it was missing."""
        return replace(
            self,
            file=self.file or file,
            line=self.line if self.line is not None else line,
            column=self.column if self.column is not None else column,
        )

    def prefixed(self, prefix: Sequence[str | int]) -> Problem:
        """A copy whose path starts with ``prefix`` (a problem of a part, seen from the whole)."""
        return replace(self, path=(*prefix, *self.path))

    def relocated(
        self,
        path: Sequence[str | int],
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> Problem:
        """A copy placed at ``path`` in ``file``, replacing any earlier location."""
        return replace(self, path=tuple(path), file=file, line=line, column=column)


def _jsonable(value: object) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


class PolyaxonPrefectError(Exception):
    """Root of every error this package raises on purpose."""


class HintedError(PolyaxonPrefectError, ValueError):
    """An error whose ``message`` may come with a ``hint`` of what to do; its text says both
    (``message; hint: hint``)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message + (f"; hint: {hint}" if hint else ""))
        self.message = message
        self.hint = hint


class WriteFailedError(PolyaxonPrefectError, OSError):
    """A file this package must write (a journal, a log, the artifacts root) could not be.

    Its message is one line that names the path and why (`write_failure`): a full disk or a
    read-only folder is said once, where it happened, instead of a traceback or a silent gap.
    """


def write_failure(path: object, error: OSError) -> str:
    """One phrase for a write to ``path`` that failed with ``error``, the same everywhere:
    a full disk and a read-only folder are named as such (they are what a user can fix)."""
    import errno

    code = error.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk holding {path} is full (no space left to write it)"
    if code == errno.EFBIG:
        return f"{path} reached the largest file size allowed here (file size limit)"
    if code == errno.EROFS:
        return f"{path} is on a read-only file system"
    if code in (errno.EACCES, errno.EPERM):
        return f"{path} cannot be written (permission denied)"
    return f"{path} cannot be written ({error.strerror or error})"


def unwritable_study(error: OSError) -> str:
    """The one line for a sweep whose study storage cannot be written (a full disk, a
    read-only folder): what, why, and how to go on."""
    where = write_failure(error.filename or "its storage", error)
    return (
        f"the sweep's study cannot be written: {where}; the trials in flight were stopped; "
        "make room there, then run again with --resume"
    )


class PolyaxonfileError(PolyaxonPrefectError, ValueError):
    """A Polyaxonfile (or a param given for it) is invalid.

    Carries every problem found in the file, not just the first, so a user fixes them in one go,
    and the warnings found on the way (``warnings``), which ``check`` prints next to them.
    """

    def __init__(
        self,
        problems: Iterable[Problem] | str,
        *,
        file: str | None = None,
        warnings: Iterable[Problem] = (),
    ) -> None:
        if isinstance(problems, str):
            problems = [Problem(problems, file=file)]
        self.problems: list[Problem] = [p.located(file=file) for p in problems]
        self.warnings: list[Problem] = [w.located(file=file) for w in warnings]
        if not self.problems:
            raise ValueError("PolyaxonfileError needs at least one problem")
        super().__init__(self._summary())

    def _summary(self) -> str:
        lines = [p.format() for p in self.problems]
        if len(lines) == 1:
            return lines[0]
        return f"{len(lines)} problems found:\n" + "\n".join(lines)

    @property
    def file(self) -> str | None:
        return self.problems[0].file

    def to_list(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.problems]


class DagError(PolyaxonfileError):
    """A DAG is not valid: a cycle, an unknown upstream, a duplicate name, a bad ref."""


class UnsupportedFeatureError(PolyaxonfileError):
    """A valid Polyaxon feature that this runtime deliberately does not execute."""
