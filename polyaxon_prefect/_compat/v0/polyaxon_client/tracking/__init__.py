"""``polyaxon_client.tracking`` (polyaxon-client v0.5/0.6): ``Experiment`` and the module
functions, on this run.

v0 uploaded files to the run's outputs store: here they are copied under the run's outputs
path (``get_outputs_path()``). Distributed facts (``get_cluster_def``, ``get_task_info``) come
from the replica environment the runtime gives each replica (``TF_CONFIG``, ``RANK``...).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import _polyaxon_prefect_compat as _c
from _polyaxon_prefect_compat import noop, tracking

__all__ = [
    "BuildJob",
    "Experiment",
    "Group",
    "Job",
    "get_base_outputs_path",
    "get_cluster_def",
    "get_data_paths",
    "get_log_level",
    "get_outputs_path",
    "get_outputs_refs_paths",
    "get_task_info",
    "get_tf_config",
    "is_master",
]


def get_data_paths() -> dict[str, str]:
    """The mounted data paths by name (``{"data": "<artifacts root>/data"}`` by default)."""
    return _c.data_paths()


def get_outputs_path() -> str:
    """The run's outputs directory (``POLYAXON_RUN_OUTPUTS_PATH``)."""
    return str(tracking.get_outputs_path())


def get_base_outputs_path() -> str:
    """The artifacts root all runs' directories live under."""
    return str(Path(tracking.get_artifacts_path()).parent.parent)


def get_outputs_refs_paths() -> None:
    """v0's outputs of referenced jobs: none here (use a DAG's ``{{ ops.x.outputs }}``)."""
    _c.warn_once("get_outputs_refs_paths", "has no refs here; returns None")
    return None


def get_log_level() -> str | None:
    return os.environ.get("POLYAXON_LOG_LEVEL")


def get_cluster_def() -> dict[str, list[str]] | None:
    return _c.cluster_def()


def get_task_info() -> dict[str, Any] | None:
    return _c.task_info()


def get_tf_config(envvar: str | None = "TF_CONFIG") -> dict[str, Any]:
    return _c.tf_config(envvar)


def is_master() -> bool:
    return _c.is_master()


def _upload(path: str | os.PathLike[str]) -> None:
    source = Path(path)
    outputs = Path(get_outputs_path())
    if not source.exists():
        raise FileNotFoundError(f"cannot log `{source}`: no such file or directory")
    if source.resolve().is_relative_to(outputs.resolve()):
        return
    target = outputs / source.name
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        shutil.copy2(source, target)


class Experiment:
    """v0's tracked experiment: this run (project/experiment ids are read, not created)."""

    def __init__(
        self,
        project: str | None = None,
        experiment_id: Any = None,
        group_id: Any = None,
        client: Any = None,
        track_logs: bool = True,
        track_code: bool = True,
        track_env: bool = True,
        outputs_store: Any = None,
    ) -> None:
        info = _c.experiment_info()
        self.project = project or info["project_name"]
        self.experiment_id = experiment_id or info["experiment_uuid"]
        self.group_id = group_id
        self._run = _c.Run(project=self.project, run_uuid=info["experiment_uuid"])

    def log_metrics(self, **metrics: Any) -> None:
        step = metrics.pop("step", None)
        tracking.log_metrics(step=step if isinstance(step, int) else None, **metrics)

    def log_params(self, reset: bool = False, **params: Any) -> None:
        self._run.log_inputs(**params)

    def log_tags(self, tags: Any, reset: bool = False) -> None:
        self._run.log_tags(tags)

    def log_data_ref(self, data: Any, data_name: str = "data", reset: bool = False) -> None:
        self._run.log_data_ref(name=data_name, content=data)

    def log_artifact(self, file_path: str) -> None:
        _upload(file_path)

    def log_artifacts(self, dir_path: str) -> None:
        _upload(dir_path)

    def log_output(self, filename: str, **kwargs: Any) -> None:
        _upload(filename)

    def log_outputs(self, dirname: str, **kwargs: Any) -> None:
        _upload(dirname)

    get_cluster_def = staticmethod(get_cluster_def)
    get_task_info = staticmethod(get_task_info)
    get_data_paths = staticmethod(get_data_paths)
    get_outputs_refs_paths = staticmethod(get_outputs_refs_paths)
    get_experiment_info = staticmethod(_c.experiment_info)
    is_master = staticmethod(is_master)

    @classmethod
    def get_tf_config(cls, envvar: str | None = "TF_CONFIG") -> dict[str, Any]:
        return get_tf_config(envvar)

    @staticmethod
    def get_params() -> dict[str, Any]:
        return dict(tracking.get_params())

    @classmethod
    def get_declarations(cls) -> dict[str, Any]:
        return cls.get_params()

    def get_outputs_path(self) -> str:
        return get_outputs_path()

    def get_log_level(self) -> str | None:
        return get_log_level()

    def create(self, *args: Any, **kwargs: Any) -> Experiment:
        """The run already exists (the runtime made it): returns this experiment."""
        return self

    def set_outputs_store(self, *args: Any, **kwargs: Any) -> None:
        """Files go to the run's outputs path; another store is not supported (ignored)."""
        _c.warn_once("set_outputs_store", "is ignored: files go to the run's outputs path")

    log_code_ref = noop("log_code_ref", "is a no-op: the run records no git state here")
    log_run_env = noop("log_run_env", "is a no-op: the run's environment is not uploaded here")
    log_framework = noop("log_framework", "is a no-op here")
    log_backend = noop("log_backend", "is a no-op here")
    log_build = noop("log_build", "is a no-op here")
    log_status = noop("log_status", "is a no-op: the run's status comes from its process")
    log_succeeded = noop("log_succeeded", "is a no-op: the run's status comes from its process")
    log_stopped = noop("log_stopped", "is a no-op: the run's status comes from its process")
    log_failed = noop("log_failed", "is a no-op: exit non-zero to fail the run")
    succeeded = log_succeeded
    failed = log_failed
    stop = log_stopped
    start = noop("start", "is a no-op: the runtime started the run")
    end = noop("end", "is a no-op: the run ends when its process exits")
    send_logs = noop("send_logs", "is a no-op: the process's output is the run's log")
    set_description = noop("set_description", "is a no-op here")
    set_name = noop("set_name", "is a no-op: the run's name is set by the Polyaxonfile/CLI")


class Job(Experiment):
    """v0's ``Job`` (a run that is not an experiment): the same calls."""


class Group(Experiment):
    """v0's experiment ``Group``: tracking calls land on this run."""


class BuildJob(Experiment):
    """v0's ``BuildJob``: tracking calls land on this run."""
