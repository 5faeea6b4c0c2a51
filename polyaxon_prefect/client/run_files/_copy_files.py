"""Copying a run's files somewhere else (``artifacts --download``, ``restart --copy``) without
ever writing outside the target or following a link.

A run directory is written by the job's own code: it may hold a link to anywhere
(``outputs/outlink -> /outside``, copied whole by ``shutil.copytree``), a link loop or a FIFO
(``shutil``'s raw ``Error: [(...)]`` list, or a copy that blocks on the pipe). Here only
directories and regular files are copied; a link or a special file is skipped, and the caller
says so in one line per file. The target side is checked too: a link already in the target
(``DIR/ops -> /elsewhere``) is never written through, and a file error is one
`PolyaxonPrefectError` line naming the file.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["copy_files", "tree_files"]


def tree_files(root: Path, skip: Iterable[str] = ()) -> tuple[list[Path], list[str]]:
    """The regular files under ``root`` (paths relative to it, sorted; directories walked
    without following links) and a note per entry left out: a link, a FIFO, a socket, a
    device. ``skip``: names at the top left out silently (records not to copy)."""
    skipped = set(skip)
    files: list[Path] = []
    notes: list[str] = []
    for relative, mode in _walk(root, Path()):
        if relative.parts[0] in skipped:
            continue
        if stat.S_ISREG(mode):
            files.append(relative)
        else:
            notes.append(f"skipped {relative.as_posix()}: {_kind(mode)}, not copied")
    return sorted(files), notes


def _walk(root: Path, relative: Path) -> Iterator[tuple[Path, int]]:
    """``(path relative to root, lstat mode)`` of every entry but directories, depth first."""
    folder = root / relative
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise _file_error("cannot read the directory", folder, exc) from None
    for entry in entries:
        path = relative / entry.name
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            raise _file_error("cannot read", root / path, exc) from None
        if stat.S_ISDIR(mode):
            yield from _walk(root, path)
        else:
            yield path, mode


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or special file"


def copy_files(pairs: Iterable[tuple[Path, Path]], target: Path, hint: str = "") -> None:
    """Copy each ``(source, path relative to target)``: ``source`` must be a regular file (a
    link or anything else there now is refused), and nothing is written through a link or
    outside ``target``. A failure is one line: ``cannot copy the run's files into TARGET:
    why (the file)``, then ``hint``."""

    def refused(why: str, path: Path) -> PolyaxonPrefectError:
        tail = f"; {hint}" if hint else ""
        return PolyaxonPrefectError(
            f"cannot copy the run's files into {target}: {why} ({path}){tail}"
        )

    try:
        target.mkdir(parents=True, exist_ok=True)
        top = target.resolve(strict=True)
    except OSError as exc:
        raise refused(exc.strerror or type(exc).__name__, target) from None
    for source, relative in pairs:
        destination = target / relative
        if relative.is_absolute() or ".." in relative.parts:
            raise refused("a path outside it", destination)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            if not destination.parent.resolve(strict=True).is_relative_to(top):
                raise refused("a link in it leads outside it", destination.parent)
            if destination.is_symlink():  # replaced, never written through
                destination.unlink()
            _copy_regular(source, destination)
        except OSError as exc:
            raise refused(
                exc.strerror or type(exc).__name__, Path(exc.filename or source)
            ) from None


def _copy_regular(source: Path, destination: Path) -> None:
    """``source`` (opened without following a link, and only if a regular file: a FIFO would
    block) to ``destination``, with its times and mode."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as reader:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            raise OSError(0, "not a regular file", str(source))
        with open(destination, "wb") as writer:
            shutil.copyfileobj(reader, writer)
    shutil.copystat(source, destination, follow_symlinks=False)


def _file_error(what: str, path: Path, exc: OSError) -> PolyaxonPrefectError:
    return PolyaxonPrefectError(f"{what} {path}: {exc.strerror or exc}")
