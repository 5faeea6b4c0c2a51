"""The ``git`` init step: a clone (and checkout) that either succeeds or leaves nothing.

Its own module because it is the one init step that runs a program with the job's secrets:
the URL forms it accepts, the prompt it disables and the masking of its errors belong together.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from polyaxon_prefect.runtime._errors import InitStepError
from polyaxon_prefect.runtime._paths import writable_target
from polyaxon_prefect.runtime.logs._masking import mask_text, redact_url_credentials
from polyaxon_prefect.runtime.render._connections import connection_env_prefix

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import InitStep, PreparedJob

__all__ = ["init_git"]


def _repo_name(url: str) -> str:
    """The directory a clone of ``url`` goes to: its last path segment without ``.git``.

    A segment that names no directory of its own (``.``, ``..``: a URL ending in ``/..`` would
    otherwise point at the parent of the destination) is refused, not guessed around.
    """
    name = url.rstrip("/").split("/")[-1].split(":")[-1]
    name = name[: -len(".git")] if name.endswith(".git") else name
    if name in ("", ".", "..") or "\x00" in name:
        raise InitStepError(
            f"the repository url `{redact_url_credentials(url)}` does not end in a usable "
            f"directory name (got `{name}`); end it with the repository's name"
        )
    return name


def _git_url(url: str, base: Path) -> str:
    if "://" in url or url.startswith("git@") or re.match(r"^[\w.-]+@[\w.-]+:", url):
        return url
    path = Path(url).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _run_git(args: list[str], env: Mapping[str, str], cwd: Path, secrets: Sequence[str]) -> None:
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        raise InitStepError("`git` is not installed or not on PATH")
    env = {**env, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password on a terminal
    proc = subprocess.run(
        [git, *args],
        env=env,
        cwd=str(cwd),
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise InitStepError(
            mask_text(f"`git {args[0]}` exited with code {proc.returncode}: {tail}", secrets)
        )


def init_git(step: InitStep, job: PreparedJob, base: Path) -> None:
    """Clone into a temporary directory next to the destination, and move it in only once the
    clone (and checkout) succeeded: a failing clone leaves the destination as it was."""
    spec = step.spec
    url = getattr(spec, "url", None)
    if not url and step.connection:
        url = job.env.get(connection_env_prefix(step.connection) + "URL")
    if not url:
        raise InitStepError("no repository url (set `git.url`, or a connection with `schema.url`)")
    if spec.revision and spec.revision.startswith("-"):
        raise InitStepError(f"the revision `{spec.revision}` is not a commit, branch or tag name")
    target = writable_target(step.dest / _repo_name(url), job.context, explicit=step.explicit_dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = list(spec.flags or []) if not isinstance(spec.flags, str) else []
    source = _git_url(url, base)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.clone-", dir=target.parent))
    try:
        clone = staging / target.name
        depth = [] if spec.revision else ["--depth", "1"]
        _run_git(["clone", *depth, *flags, "--", source, str(clone)], job.env, staging, job.secrets)
        if spec.revision:
            _run_git(["checkout", "--quiet", spec.revision], job.env, clone, job.secrets)
        if target.is_dir() and not target.is_symlink():
            # inside the run's context (an earlier attempt's clone) or an empty directory
            shutil.rmtree(target)
        os.replace(clone, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_LS_REMOTE_TIMEOUT = 30.0


def git_commit(step: InitStep, env: Mapping[str, str], base: Path) -> str:
    """The commit a ``git`` init step will check out, for the op's code hash: its revision when
    that is a full commit id, else asked of the repository (``rev-parse`` for a local one,
    ``ls-remote`` for a remote one: no clone).

    Raises:
        InitStepError: no URL, or git cannot answer (the op is then not cached).
    """
    spec = step.spec
    revision = getattr(spec, "revision", None) or "HEAD"
    if _COMMIT.match(revision):
        return revision
    url = getattr(spec, "url", None)
    if not url and step.connection:
        url = env.get(connection_env_prefix(step.connection) + "URL")
    if not url:
        raise InitStepError("no repository url")
    source = _git_url(url, base)
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        raise InitStepError("`git` is not installed or not on PATH")
    if Path(source).is_dir():
        args = [git, "-C", source, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"]
    else:
        args = [git, "ls-remote", "--", source, revision]
    try:
        proc = subprocess.run(
            args,
            env={**env, "GIT_TERMINAL_PROMPT": "0"},
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
            timeout=_LS_REMOTE_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InitStepError(f"git could not name the commit of {revision}: {exc}") from None
    words = proc.stdout.split()
    if proc.returncode != 0 or not words or not _COMMIT.match(words[0]):
        raise InitStepError(
            f"git could not name the commit of `{revision}` in "
            f"{redact_url_credentials(url)} (an unknown revision, or out of reach)"
        )
    return words[0]
