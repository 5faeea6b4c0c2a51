"""What an op's code hash covers: the rules, without reading a file (`_code_hash` reads them).

A local op's cache key covers the code its command can read, not only its spec and params
(on a cluster Polyaxon's key names the image; here the code is a folder that changes between
runs). That code is every file under the op's working folder, by relative path and content,
but the noise no command reads as code: VCS internals, bytecode caches, and the folders this
project writes runs into, what the folder's ``.polyaxonignore`` names (Polyaxon's file for
what an upload leaves out), and the Polyaxonfiles themselves (they are the op's spec, already in
the key: editing one op of a ``dag.yaml`` must not rerun the others). The walk has a budget
(files and bytes): past it the op is not cached, with one line saying why, rather than hashed
for seconds or hashed in part (a partial hash could call two different folders the same code).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = [
    "CODE_MAX_BYTES_ENV",
    "CODE_MAX_FILES_ENV",
    "IGNORE_FILE",
    "SKIPPED_DIRS",
    "SKIPPED_FILE_SUFFIXES",
    "CodeBudget",
    "CodeBudgetError",
    "code_budget",
    "code_digest",
    "ignore_patterns",
    "ignored",
    "is_polyaxonfile",
    "key_with_code",
    "over_budget",
    "short_code",
    "skipped_dir",
    "skipped_file",
]

CODE_MAX_FILES_ENV = "POLYAXON_PREFECT_CODE_HASH_MAX_FILES"
CODE_MAX_BYTES_ENV = "POLYAXON_PREFECT_CODE_HASH_MAX_BYTES"
DEFAULT_MAX_FILES = 20_000
DEFAULT_MAX_BYTES = 256 * 1024 * 1024

SKIPPED_DIRS = frozenset(
    {
        # version control internals: a commit or a fetch is not a change of the code read
        ".git",
        ".hg",
        ".svn",
        # caches tools write next to the code
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".ipynb_checkpoints",
        # what this project writes: a tracking call run outside a run (`tracking.LOCAL_RUN_DIR`)
        ".polyaxon-prefect-run",
        ".polyaxon-prefect",
    }
)
"""Folder names skipped wherever they are under the working folder. The artifacts root and the
Prefect home are skipped too when they lie inside it (by path: `_code_hash`)."""

IGNORE_FILE = ".polyaxonignore"
SKIPPED_FILE_SUFFIXES = (".pyc", ".pyo")
_SPEC_SUFFIXES = (".yaml", ".yml")
_TOP_VERSION = re.compile(rb"^version:", re.MULTILINE)
_TOP_KIND = re.compile(rb"^kind:", re.MULTILINE)
_SKIPPED_FILES = frozenset({".DS_Store"})
_SHORT = 12


class CodeBudgetError(PolyaxonPrefectError):
    """A code-hash budget env var that is not a whole number: one line naming it."""


@dataclass(frozen=True)
class CodeBudget:
    """At most ``max_files`` files and ``max_bytes`` bytes are hashed for one op."""

    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise CodeBudgetError(
            f"{name}={raw!r} is not a whole number >= 0 (the most the code hash of an op "
            f"reads; default {default})"
        )
    return value


def code_budget(env: Mapping[str, str]) -> CodeBudget:
    """The budget from ``env`` (`CODE_MAX_FILES_ENV`, `CODE_MAX_BYTES_ENV`).

    Raises:
        CodeBudgetError: a value that is not a whole number >= 0.
    """
    return CodeBudget(
        _whole(env, CODE_MAX_FILES_ENV, DEFAULT_MAX_FILES),
        _whole(env, CODE_MAX_BYTES_ENV, DEFAULT_MAX_BYTES),
    )


def skipped_dir(name: str) -> bool:
    """Whether a folder called ``name`` is left out of the code hash (with all it holds)."""
    return name in SKIPPED_DIRS


def skipped_file(name: str) -> bool:
    """Whether a file called ``name`` is left out of the code hash."""
    return name in _SKIPPED_FILES or name.endswith(SKIPPED_FILE_SUFFIXES)


def over_budget(files: int, size: int, budget: CodeBudget, folder: str) -> str | None:
    """None while ``files`` files of ``size`` bytes fit ``budget``; else the line that says the
    op is not cached, and how to raise the budget."""
    if files > budget.max_files:
        return (
            f"not cached: its working folder {folder} has more than {budget.max_files} files "
            f"to hash (raise {CODE_MAX_FILES_ENV}, or run it from a smaller folder)"
        )
    if size > budget.max_bytes:
        return (
            f"not cached: its working folder {folder} has more than {budget.max_bytes} bytes "
            f"to hash (raise {CODE_MAX_BYTES_ENV}, or run it from a smaller folder)"
        )
    return None


def code_digest(files: Iterable[tuple[str, str]], runtime: Mapping[str, str]) -> str:
    """The code hash: each file's relative path (``/``-separated) and content digest, in path
    order, and what runs them (``runtime``: the interpreter, the image, a git commit)."""
    digest = hashlib.sha256()
    for path, content in sorted(files):
        digest.update(f"f\0{path}\0{content}\n".encode("utf-8", "surrogateescape"))
    for name, value in sorted(runtime.items()):
        digest.update(f"r\0{name}\0{value}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def key_with_code(key: str, code: str) -> str:
    """The cache key of an op: its spec's key (`cache_key`) and its code hash together."""
    return hashlib.sha256(f"{key}|code:{code}".encode()).hexdigest()


def short_code(code: str) -> str:
    """The code hash as users read it (a hit's line, ``ops.json``)."""
    return code[:_SHORT]


def ignore_patterns(text: str) -> tuple[str, ...]:
    """The patterns of a ``.polyaxonignore``: one glob a line, ``#`` comments and blank lines
    left out (gitignore's basic forms: ``name``, ``dir/``, ``/anchored/path``, ``*.ext``;
    ``!`` is not supported and such a line is ignored)."""
    lines = (line.strip() for line in text.splitlines())
    return tuple(line for line in lines if line and not line.startswith(("#", "!")))


def ignored(relative: str, is_dir: bool, patterns: Sequence[str]) -> bool:
    """Whether the file or folder at ``relative`` (``/``-separated, from the working folder)
    matches one of ``patterns``: a pattern with a ``/`` inside or in front matches the whole
    path, one without matches the name at any depth; a trailing ``/`` matches folders only."""
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatchcase(relative, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def is_polyaxonfile(name: str, head: bytes) -> bool:
    """Whether a file is a Polyaxonfile (a ``.yaml``/``.yml`` whose first bytes ``head`` have
    top-level ``version:`` and ``kind:`` keys): the op's spec, hashed as the spec, not as code."""
    if not name.endswith(_SPEC_SUFFIXES):
        return False
    return bool(_TOP_VERSION.search(head) and _TOP_KIND.search(head))
