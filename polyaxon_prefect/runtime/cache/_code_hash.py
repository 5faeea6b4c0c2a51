"""The code hash of a local op: its working folder's files read and hashed (the rules of what is
read are `_code_rules`'), and the identity of what runs them.

Contents are the truth: every file under the budget is read whole (a path, size and mtime
pre-check could call an edit within the same second and size unchanged the same code).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from polyaxon_prefect.runtime._errors import InitStepError
from polyaxon_prefect.runtime.cache._code_rules import (
    IGNORE_FILE,
    CodeBudget,
    code_budget,
    code_digest,
    ignore_patterns,
    ignored,
    is_polyaxonfile,
    over_budget,
    skipped_dir,
    skipped_file,
)
from polyaxon_prefect.runtime.render._compat_path import this_interpreter
from polyaxon_prefect.runtime.render._git import git_commit

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import InitStep

__all__ = ["CodeState", "folder_files", "interpreter_identity", "op_code", "read_code"]

_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class CodeState:
    """An op's code hash (``digest``), or why it has none (``reason``: the op is not cached)."""

    digest: str | None
    reason: str = ""
    files: int = 0
    size: int = 0


def _patterns(root: Path) -> tuple[str, ...]:
    try:
        return ignore_patterns((root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ()


def _walk(
    root: Path, skip: frozenset[str], budget: CodeBudget
) -> tuple[list[tuple[str, str, int]], int] | str:
    """The files under ``root`` as (relative path, absolute path, size) and their total size,
    or the line saying the budget was exceeded (the walk stops there)."""
    patterns = _patterns(root)
    found: list[tuple[str, str, int]] = []
    total = 0
    stack = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # a folder the op cannot list holds no code it reads
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if not (
                    skipped_dir(entry.name)
                    or entry.path in skip
                    or ignored(relative, True, patterns)
                ):
                    stack.append((entry.path, relative + "/"))
                continue
            if ignored(relative, False, patterns):
                continue
            if entry.is_symlink() and not entry.is_file():
                # a link to a folder (or a dangling one): its target names the code, not
                # followed (a link to `..` would loop); a link to a file is hashed as the file
                found.append((relative, "link:" + os.readlink(entry.path), 0))
                continue
            if skipped_file(entry.name):
                continue
            try:
                size = entry.stat().st_size
            except OSError:
                size = 0
            total += size
            found.append((relative, entry.path, size))
            reason = over_budget(len(found), total, budget, str(root))
            if reason is not None:
                return reason
    return found, total


def _content(path: str) -> str | None:
    """The digest of a file's bytes; None for a Polyaxonfile (`is_polyaxonfile`: its spec is
    in the key already)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            chunk = handle.read(_CHUNK)
            if is_polyaxonfile(path, chunk):
                return None
            while chunk:
                digest.update(chunk)
                chunk = handle.read(_CHUNK)
    except OSError as exc:  # the command cannot read it either: that is what it sees
        return f"unreadable:{exc.errno}"
    return digest.hexdigest()


def folder_files(
    root: Path, budget: CodeBudget, skip: Iterable[Path] = ()
) -> tuple[list[tuple[str, str]], int] | str:
    """Each file under ``root`` with its content digest (relative path, digest) and the total
    size, or the line saying why it was not hashed (over ``budget``). ``skip``: folders left
    out by path (the artifacts root, the Prefect home, when they lie inside ``root``)."""
    if not root.is_dir():
        return [], 0  # no folder, no code: never the same code as a folder that has some
    walked = _walk(root, frozenset(str(p) for p in skip), budget)
    if isinstance(walked, str):
        return walked
    found, total = walked
    files: list[tuple[str, str]] = []
    for rel, path, _ in found:
        content = path if path.startswith("link:") else _content(path)
        if content is not None:
            files.append((rel, content))
    return files, total


def _program_identity(program: str, env: Mapping[str, str]) -> str:
    """A program other than our interpreter: its real path, size and mtime (running it to ask
    its version would cost a process per op)."""
    found = shutil.which(program, path=env.get("PATH")) if os.sep not in program else program
    if found is None:
        return f"{program} (not found)"
    real = os.path.realpath(found)
    try:
        info = os.stat(real)
    except OSError:
        return real
    if not stat.S_ISREG(info.st_mode):
        return real
    return f"{real} {info.st_size} {info.st_mtime_ns}"


def interpreter_identity(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """What runs the op's code: our interpreter (a ``python`` in argv or on the job's PATH is
    it: `python_argv`, `python_env`), and the command's program when it is another one."""
    identity = {"python": f"{this_interpreter()} {sys.version}"}
    if argv and argv[0] != sys.executable:
        identity["program"] = _program_identity(argv[0], env)
    return identity


def read_code(
    folder: Path,
    runtime: Mapping[str, str],
    budget: CodeBudget,
    skip: Iterable[Path] = (),
) -> CodeState:
    """The code hash of what an op can read in ``folder``, run by ``runtime``."""
    folder = folder.absolute()
    hashed = folder_files(folder, budget, [p.absolute() for p in skip])
    if isinstance(hashed, str):
        return CodeState(None, hashed)
    files, size = hashed
    return CodeState(code_digest(files, runtime), files=len(files), size=size)


def op_code(
    cwd: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    steps: Sequence[InitStep],
    base: Path,
    artifacts_root: Path,
) -> CodeState:
    """The code hash of a local op: the files of its working folder ``cwd`` (the artifacts root
    and the Prefect home left out when inside it), the interpreter that runs them, and the
    commit each ``git`` init step checks out.

    Raises:
        CodeBudgetError: a budget env var that is not a whole number.
    """
    budget = code_budget(os.environ)
    runtime = interpreter_identity(argv, env)
    for step in steps:
        if step.kind != "git":
            continue
        try:
            runtime[f"git{step.index}"] = git_commit(step, env, base)
        except InitStepError as exc:
            return CodeState(None, f"not cached: the commit of its git init step is unknown: {exc}")
    home = env.get("PREFECT_HOME") or os.environ.get("PREFECT_HOME")
    skip = [artifacts_root, *([Path(home).expanduser()] if home else [])]
    return read_code(cwd, runtime, budget, skip)
