"""Where a run's files go: Polyaxon's ``/plx-context`` mapped into the run, and the guard that
keeps init steps from writing over what the run did not create.

Shared by the job's ``workingDir``, the init steps and (later) each replica of a distributed
run, so every one of them maps and guards paths the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._errors import InitStepError

__all__ = ["CONTEXT_ROOT", "as_path", "is_explicit", "is_within", "pairs", "writable_target"]

CONTEXT_ROOT = "/plx-context"  # Polyaxon's in-container context path, mapped to the run's


def as_path(value: str, context: RunContext, base: Path) -> Path:
    """A path from the Polyaxonfile: ``/plx-context/...`` maps into the run's context directory,
    a relative path is relative to ``base``."""
    if value == CONTEXT_ROOT or value.startswith(CONTEXT_ROOT + "/"):
        return context.context_path / value[len(CONTEXT_ROOT) :].lstrip("/")
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def is_explicit(value: str | None) -> bool:
    """Whether a destination from the Polyaxonfile is an absolute path the user named (not a
    ``/plx-context`` path, which maps into the run)."""
    if not value or value == CONTEXT_ROOT or value.startswith(CONTEXT_ROOT + "/"):
        return False
    return Path(value).expanduser().is_absolute()


def is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def writable_target(target: Path, ctx: RunContext, *, explicit: bool) -> Path:
    """Where an init step may write ``target``, resolved (symlinks and ``..`` included).

    Inside the run's context directory anything goes: the run made it. Outside, only a path the
    user named explicitly as absolute is accepted, and never over something that is already
    there (a non-empty directory, or a file), since the run did not create it.
    """
    resolved = target.resolve()
    root = ctx.context_path.resolve()
    if is_within(resolved, root):
        return resolved
    if not explicit:
        raise InitStepError(
            f"{target} is outside the run's context directory {root}; init steps write only "
            "there, or to an absolute `path` named explicitly"
        )
    if resolved.is_dir():
        if any(resolved.iterdir()):
            raise InitStepError(
                f"{resolved} already exists and is not empty; an init step never writes over "
                "what the run did not create (choose an empty or new directory)"
            )
    elif resolved.exists():
        raise InitStepError(
            f"{resolved} already exists; an init step never writes over what the run did not create"
        )
    return resolved


def pairs(items: Any) -> list[tuple[str, str | None]]:
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    out: list[tuple[str, str | None]] = []
    for item in items:
        if isinstance(item, list | tuple):
            out.append((str(item[0]), str(item[1])))
        else:
            out.append((str(item), None))
    return out
