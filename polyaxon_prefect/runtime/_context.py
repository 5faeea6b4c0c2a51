"""Who a local run is and where its files live: ids, paths, Polyaxon globals and env vars.

Layout (all under the artifacts root)::

    <artifacts root>/<project>/<run uuid>/          run_path = run_artifacts_path
        outputs/                                    run_outputs_path (outputs.json, metrics.jsonl)
        context/                                    context_path (Polyaxon's /plx-context)
            artifacts/                              artifacts_path (init steps write here)

The artifacts root comes from the argument, else ``POLYAXON_PREFECT_ARTIFACTS_ROOT``, else
``~/.polyaxon_prefect/artifacts``. A user-level default rather than one relative to the current
directory because Prefect workers and deployments run flows from temporary working directories:
a relative default would scatter (and lose) run outputs, while cache lookups and downstream ops
need one stable place. It is expanded when a run is created, not at import.
"""

from __future__ import annotations

import functools
import getpass
import json
import os
import re
import uuid as _uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from polyaxon_prefect import tracking
from polyaxon_prefect.client import (
    DEFAULT_ARTIFACTS_ROOT,
    ENV_ARTIFACTS_ROOT,
    find_run_path,
    resolve_artifacts_root,
)
from polyaxon_prefect.client import SEGMENT as _SEGMENT

__all__ = [
    "DEFAULT_ARTIFACTS_ROOT",
    "DEFAULT_OWNER",
    "DEFAULT_PROJECT",
    "ENV_ARTIFACTS_ROOT",
    "ENV_PROJECT",
    "RunContext",
    "find_run_path",
    "new_run_context",
    "project_name",
    "project_uuid",
    "resolve_artifacts_root",
]

ENV_ITERATION = "POLYAXON_PREFECT_ITERATION"
DEFAULT_OWNER = "local"
ENV_PROJECT = "POLYAXON_PREFECT_PROJECT"
DEFAULT_PROJECT = "default"
"""The project of a run when no run context is given and ``POLYAXON_PREFECT_PROJECT`` is unset."""

_PROJECT_NAMESPACE = _uuid.UUID("5f3c8a52-8a52-4c2e-9a5e-706f6c796178")


def project_name() -> str:
    """The project of a run nobody named: ``POLYAXON_PREFECT_PROJECT`` made directory-safe, else
    `DEFAULT_PROJECT`. One function, so a job, a DAG and a sweep started alike share a project."""
    raw = os.environ.get(ENV_PROJECT) or DEFAULT_PROJECT
    return re.sub(r"[^A-Za-z0-9_.-]", "-", raw).strip("-.") or DEFAULT_PROJECT


_default_project_name = project_name  # `new_run_context` has an argument of the same name


def project_uuid(owner_name: str, project_name: str) -> str:
    """A stable id for a project (Polyaxon keys caches on it), derived from its full name."""
    return _uuid.uuid5(_PROJECT_NAMESPACE, f"{owner_name}.{project_name}").hex


def _check_segment(kind: str, value: str) -> str:
    if not _SEGMENT.match(value) or value in (".", ".."):
        raise ValueError(
            f"{kind} {value!r} cannot be used as a directory name; use letters, digits, "
            "`-`, `_` and `.` only, starting with a letter or digit"
        )
    return value


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class RunContext:
    """Identity, timestamps and paths of one run; immutable, use `dataclasses.replace`."""

    uuid: str
    name: str
    project_name: str
    artifacts_root: Path
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    iteration: int | None = None
    owner_name: str = DEFAULT_OWNER
    username: str | None = None
    namespace: str | None = None
    compiled_at: datetime | None = None
    schedule_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    cloning_kind: str | None = None
    original_uuid: str | None = None
    is_independent: bool = True

    def __post_init__(self) -> None:
        _check_segment("project name", self.project_name)
        _check_segment("run uuid", self.uuid)

    @property
    def project_unique_name(self) -> str:
        return f"{self.owner_name}.{self.project_name}"

    @property
    def run_info(self) -> str:
        """Polyaxon's ``owner.project.runs.uuid`` form."""
        return f"{self.project_unique_name}.runs.{self.uuid}"

    # The paths are made once per run (it is immutable): a job's start reads them a few dozen
    # times, and each join was a new `Path` parsed, on every op's path.
    @functools.cached_property
    def run_path(self) -> Path:
        return self.artifacts_root / self.project_name / self.uuid

    @property
    def run_artifacts_path(self) -> Path:
        return self.run_path

    @functools.cached_property
    def run_outputs_path(self) -> Path:
        return self.run_artifacts_path / "outputs"

    @property
    def run_relative_outputs_path(self) -> str:
        """The outputs path relative to the artifacts root, as Polyaxon's is to its store."""
        return f"{self.project_name}/{self.uuid}/outputs"

    @functools.cached_property
    def context_path(self) -> Path:
        return self.run_path / "context"

    @functools.cached_property
    def artifacts_path(self) -> Path:
        return self.context_path / "artifacts"

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def make_dirs(self) -> RunContext:
        self.make_new_dirs()
        return self

    def make_new_dirs(self) -> bool:
        """Make the run's folders; whether its run folder was made now (then it holds no file
        of an earlier attempt, and each folder under it is one call: on a job's path, each
        system call is a wait for the GIL on a busy machine)."""
        try:
            try:
                self.run_path.mkdir()
            except FileNotFoundError:  # the project's folder is new too
                self.run_path.parent.mkdir(parents=True, exist_ok=True)
                self.run_path.mkdir()
        except FileExistsError:
            for path in (self.run_outputs_path, self.artifacts_path):
                path.mkdir(parents=True, exist_ok=True)
            return False
        for path in (self.run_outputs_path, self.context_path, self.artifacts_path):
            path.mkdir()
        return True

    def globals_dict(self) -> dict[str, Any]:
        """The ``globals.*`` template context, with Polyaxon's key names.

        Paths are strings and times ISO 8601 strings (or ``None`` when not reached yet), since
        they are rendered into commands and env vars.
        """
        return {
            "owner_name": self.owner_name,
            "project_name": self.project_name,
            "project_unique_name": self.project_unique_name,
            "project_uuid": project_uuid(self.owner_name, self.project_name),
            "run_info": self.run_info,
            "name": self.name,
            "uuid": self.uuid,
            "namespace": self.namespace,
            "iteration": self.iteration,
            "context_path": str(self.context_path),
            "artifacts_path": str(self.artifacts_path),
            "run_artifacts_path": str(self.run_artifacts_path),
            "run_outputs_path": str(self.run_outputs_path),
            "run_relative_outputs_path": self.run_relative_outputs_path,
            "created_at": _iso(self.created_at),
            "compiled_at": _iso(self.compiled_at),
            "schedule_at": _iso(self.schedule_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "duration": self.duration,
            "cloning_kind": self.cloning_kind,
            "original_uuid": self.original_uuid,
            "is_independent": self.is_independent,
            "username": self.username,
        }

    def env_vars(self, params: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The environment contract of `polyaxon_prefect.tracking` for this run's process.

        ``params`` are the op's resolved param values (JSON-encoded into one variable).
        ``PYTHONUNBUFFERED=1`` is included so Python children stream their logs line by line
        instead of in 8 KiB blocks at exit; an op's own ``env`` may still override it.
        """
        params_json = json.dumps(dict(params or {}), default=str, sort_keys=True)
        env = {
            tracking.ENV_RUN_UUID: self.uuid,
            tracking.ENV_RUN_NAME: self.name,
            tracking.ENV_PROJECT: self.project_name,
            tracking.ENV_ARTIFACTS_PATH: str(self.run_artifacts_path),
            tracking.ENV_OUTPUTS_PATH: str(self.run_outputs_path),
            tracking.ENV_PARAMS: params_json,
            tracking.POLYAXON_ENV_OUTPUTS_PATH: str(self.run_outputs_path),
            tracking.POLYAXON_ENV_PARAMS: params_json,
            tracking.POLYAXON_ENV_RUN_INSTANCE: self.run_info,
            "PYTHONUNBUFFERED": "1",
        }
        if self.iteration is not None:
            env[ENV_ITERATION] = str(self.iteration)
        return env


def _default_username() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry / no login name (containers)
        return None


def new_run_context(
    name: str,
    project_name: str | None = None,
    *,
    artifacts_root: str | os.PathLike[str] | None = None,
    iteration: int | None = None,
    run_uuid: str | None = None,
    owner_name: str = DEFAULT_OWNER,
    username: str | None = None,
    is_independent: bool = True,
    original_uuid: str | None = None,
    cloning_kind: str | None = None,
) -> RunContext:
    """A new run (fresh uuid4 hex unless given), its directories *not* created yet.

    The one constructor every runner uses, so ``globals.*`` (``username`` from the login name,
    the project from `project_name`) read the same in a job, a DAG op and a sweep trial.
    Nothing is written: a prepare that fails leaves no directory behind.
    """
    return RunContext(
        uuid=run_uuid or _uuid.uuid4().hex,
        name=name,
        project_name=project_name if project_name is not None else _default_project_name(),
        artifacts_root=resolve_artifacts_root(artifacts_root),
        iteration=iteration,
        owner_name=owner_name,
        username=username if username is not None else _default_username(),
        is_independent=is_independent,
        original_uuid=original_uuid,
        cloning_kind=cloning_kind,
    )
