"""Limits on what a Polyaxonfile may cost to read, and reading a source file within them.

A Polyaxonfile is a few kilobytes of YAML. Without limits a 433-byte alias bomb, a 50 MB file,
``pathRef: /dev/zero`` or a FIFO could take ``check`` minutes and gigabytes, or hang it. Every
limit is a setting (an environment variable) with a default far above any real file, and
hitting one is a located problem with a hint that names the setting.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LIMITS",
    "MAX_FILE_BYTES",
    "MAX_REFERENCES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "URL_MAX_BYTES",
    "URL_TIMEOUT",
    "Limit",
    "SourceError",
    "read_source",
]


@dataclass(frozen=True)
class Limit:
    """One limit: its setting, its default, and what it bounds (for messages and the README)."""

    env: str
    default: int
    what: str

    @property
    def value(self) -> int:
        raw = os.environ.get(self.env, "")
        try:
            value = int(raw) if raw else self.default
        except ValueError:
            return self.default
        return value if value > 0 else self.default

    def hint(self) -> str:
        return (
            f"if this file is really meant to be this large, raise ${self.env} (now {self.value})"
        )


MAX_FILE_BYTES = Limit("POLYAXON_PREFECT_MAX_FILE_BYTES", 4 * 1024 * 1024, "bytes in one file")
MAX_YAML_NODES = Limit(
    "POLYAXON_PREFECT_MAX_YAML_NODES", 200_000, "YAML nodes in one file, aliases expanded"
)
MAX_YAML_DEPTH = Limit("POLYAXON_PREFECT_MAX_YAML_DEPTH", 64, "levels of nesting in one file")
MAX_REFERENCES = Limit(
    "POLYAXON_PREFECT_MAX_REFERENCES", 500, "component references resolved for one file"
)

URL_TIMEOUT = Limit("POLYAXON_PREFECT_URL_TIMEOUT", 10, "seconds to download one urlRef, in all")
URL_MAX_BYTES = Limit("POLYAXON_PREFECT_URL_MAX_BYTES", 1_000_000, "bytes of one urlRef download")

LIMITS = (
    MAX_FILE_BYTES,
    MAX_YAML_NODES,
    MAX_YAML_DEPTH,
    MAX_REFERENCES,
    URL_TIMEOUT,
    URL_MAX_BYTES,
)


class SourceError(Exception):
    """A source file that cannot be read as a Polyaxonfile (message and hint for a Problem)."""

    def __init__(self, message: str, hint: str | None = None, rule: str = "file_unreadable"):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.rule = rule


def read_source(path: Path) -> str:
    """The text of a Polyaxonfile: a regular file, at most ``MAX_FILE_BYTES``, UTF-8.

    Device files (``/dev/zero``), FIFOs and directories are refused before anything is read,
    so reading can neither hang nor exhaust memory.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SourceError(f"no such file: {path}", rule="file_not_found") from None
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise SourceError(
            f"{path} is {kind}",
            hint="a Polyaxonfile is a regular YAML file",
            rule="file_not_regular",
        )
    limit = MAX_FILE_BYTES.value
    if info.st_size > limit:
        raise SourceError(
            f"{path} is {info.st_size} bytes, more than the {limit}-byte limit",
            hint=MAX_FILE_BYTES.hint(),
            rule="file_too_large",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise SourceError(
            f"{path} is more than the {limit}-byte limit",
            hint=MAX_FILE_BYTES.hint(),
            rule="file_too_large",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(
            f"{path} is not a UTF-8 text file (byte 0x{data[exc.start]:02x} at line {line})",
            hint="save the file as UTF-8",
            rule="file_encoding",
        ) from None
