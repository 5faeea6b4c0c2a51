"""The one implementation behind the compat ``polyaxon`` and ``polyaxon_client`` packages.

This directory is put on a job's ``PYTHONPATH`` by the runtime only when the job's Python cannot
import a real ``polyaxon`` / ``polyaxon_client`` (see
``polyaxon_prefect.runtime.render._compat_path``), so training code written for Polyaxon runs
unchanged.
Every call maps onto the `polyaxon_prefect.tracking` contract (outputs, metrics, the run's
artifacts directory, params, run uuid) and the replica environment of distributed kinds.

Imports only the standard library and our tracking module, which it loads from its file when
``polyaxon_prefect`` itself is not importable (a job's interpreter may be another Python).
Calls that have no meaning here warn once per name and return ``None``; they never raise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "ENV_DECLARED_OUTPUTS",
    "Run",
    "cluster_def",
    "data_paths",
    "experiment_info",
    "is_master",
    "noop",
    "task_info",
    "tf_config",
    "tracking",
    "warn_once",
]

ENV_DECLARED_OUTPUTS = "POLYAXON_PREFECT_DECLARED_OUTPUTS"
"""JSON list of the outputs the component declares (set by the runtime with this path)."""

_TRACKING_NAME = "polyaxon_prefect.tracking"


def _load_tracking() -> ModuleType:
    """Our tracking module: the imported one if any, else loaded from the file beside us."""
    if _TRACKING_NAME in sys.modules:
        return sys.modules[_TRACKING_NAME]
    path = Path(__file__).resolve().parent.parent / "tracking.py"
    spec = importlib.util.spec_from_file_location("_polyaxon_prefect_tracking", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the wheel ships both
        raise ImportError(f"cannot load polyaxon_prefect's tracking module from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_polyaxon_prefect_tracking"] = module
    spec.loader.exec_module(module)
    return module


tracking = _load_tracking()

_warned: set[str] = set()


def warn_once(name: str, why: str) -> None:
    """One warning per API name per process: the call did nothing here, and why."""
    if name in _warned:
        return
    _warned.add(name)
    message = f"polyaxon-prefect: `{name}` {why}"
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    except Warning:  # warnings turned into errors (-W error): still never fail the run
        sys.stderr.write(f"RuntimeWarning: {message}\n")


def noop(name: str, why: str = "has no meaning outside a Polyaxon cluster; ignored") -> Any:
    """A callable that warns once and returns None, for the API names with no effect here."""

    def call(*_args: Any, **_kwargs: Any) -> None:
        warn_once(name, why)

    call.__name__ = name.rsplit(".", 1)[-1]
    call.__doc__ = f"No-op under polyaxon-prefect: {why}."
    return call


# --------------------------------------------------------------------------------------------------
# paths and files


def _artifacts() -> Path:
    return Path(tracking.get_artifacts_path())


def _sub(base: str, rel_path: str | None, is_dir: bool = True, ensure: bool = True) -> str:
    path = Path(base) / rel_path if rel_path else Path(base)
    if ensure:
        (path if is_dir else path.parent).mkdir(parents=True, exist_ok=True)
    return str(path)


def _safe_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
    return cleaned.strip(".") or "artifact"


def _asset_path(kind: str, name: str, step: int | None, ext: str = "") -> Path:
    """``<run>/assets/<kind>/<name>[_<step>][<ext>]``, the layout Polyaxon's run uses."""
    stem = _safe_name(name) + (f"_{step}" if step is not None else "")
    path = _artifacts() / "assets" / kind / f"{stem}{ext}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _copy(src: str | os.PathLike[str], dst: Path) -> Path:
    source = Path(src)
    if not source.exists():
        raise FileNotFoundError(f"cannot log `{source}`: no such file or directory")
    if source.resolve() == dst.resolve():
        return dst
    if source.is_dir():
        shutil.copytree(source, dst, dirs_exist_ok=True)
    else:
        shutil.copy2(source, dst)
    return dst


def _append_json(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, default=str, sort_keys=True) + "\n")


def _now(timestamp: datetime | None = None) -> str:
    return (timestamp or datetime.now(timezone.utc)).isoformat()  # noqa: UP017 - old Pythons


def _lineage(kind: str, **fields: Any) -> None:
    """One line of ``<run>/lineage.jsonl``: what the run read or wrote (Polyaxon's refs)."""
    record = {"kind": kind, "timestamp": _now()}
    record.update({key: value for key, value in fields.items() if value is not None})
    _append_json(_artifacts() / "lineage.jsonl", record)


def _declared_outputs() -> set[str] | None:
    raw = os.environ.get(ENV_DECLARED_OUTPUTS)
    if raw is None:
        return None
    try:
        names = json.loads(raw)
    except ValueError:
        return None
    return {str(name) for name in names} if isinstance(names, list) else None


def _log_values(kind: str, values: dict[str, Any]) -> None:
    """Polyaxon's ``log_outputs``/``log_inputs``: declared outputs go to the run's outputs;
    other names (Polyaxon keeps any) go to ``<outputs>/logged_<kind>.json``, with one warning,
    so a name the component does not declare never fails the run."""
    declared = _declared_outputs() if kind == "outputs" else set()
    if declared is None:
        declared = set(values)
    kept = {name: value for name, value in values.items() if name in declared}
    extra = {name: value for name, value in values.items() if name not in declared}
    if kept:
        tracking.log_outputs(**kept)
    if extra:
        if kind == "outputs":
            warn_once(
                "log_outputs",
                f"got names the component does not declare ({', '.join(sorted(extra))}): "
                "kept in outputs/logged_outputs.json, not in the run's outputs; declare them "
                "under `outputs:` to see them in `get`",
            )
        path = Path(tracking.get_outputs_path()) / f"logged_{kind}.json"
        current: dict[str, Any] = {}
        if path.exists():
            try:
                current = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                current = {}
        current.update(json.loads(json.dumps(extra, default=_jsonable)))
        path.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _jsonable(value: Any) -> Any:
    for attr in ("tolist", "item"):
        if callable(getattr(value, attr, None)):
            return getattr(value, attr)()
    return str(value)


def _metrics(values: dict[str, Any]) -> dict[str, Any]:
    """Only the values a metric can hold (numbers): Keras logs may carry strings or arrays."""
    kept = {}
    for name, value in values.items():
        if isinstance(value, (bool, str, bytes)):
            continue
        try:
            float(value)
        except (TypeError, ValueError):
            continue
        kept[str(name)] = value
    return kept


# --------------------------------------------------------------------------------------------------
# the v1/v2 run object (polyaxon.tracking.Run, polyaxon.client.RunClient)

_NO_MEDIA = "is not recorded by polyaxon-prefect (no media store); ignored"


class Run:
    """Polyaxon's tracking run, as far as tracking goes, on this run's directory."""

    def __init__(
        self,
        owner: str | None = None,
        project: str | None = None,
        run_uuid: str | None = None,
        *args: Any,
        artifacts_path: str | None = None,
        **kwargs: Any,
    ) -> None:
        if artifacts_path:
            tracking.init(artifacts_path=artifacts_path)
        self.owner = owner or "default"
        self.project = project or os.environ.get(tracking.ENV_PROJECT)
        self.run_uuid = run_uuid or os.environ.get(tracking.ENV_RUN_UUID)

    # identity --------------------------------------------------------------------------------
    @property
    def run_data(self) -> dict[str, Any]:
        return {
            "uuid": self.run_uuid,
            "name": os.environ.get(tracking.ENV_RUN_NAME),
            "project": self.project,
            "inputs": tracking.get_params(),
            "outputs": tracking.get_outputs(),
        }

    def get_inputs(self) -> dict[str, Any]:
        return dict(tracking.get_params())

    def get_outputs(self) -> dict[str, Any]:
        return dict(tracking.get_outputs())

    def refresh_data(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to refresh: every value is read from the run's files when asked for."""

    # paths -----------------------------------------------------------------------------------
    def get_artifacts_path(
        self,
        rel_path: str | None = None,
        ensure_path: bool = False,
        is_dir: bool = False,
        use_store_path: bool = False,
    ) -> str:
        return _sub(tracking.get_artifacts_path(), rel_path, is_dir, ensure_path)

    def get_outputs_path(
        self,
        rel_path: str | None = None,
        ensure_path: bool = True,
        is_dir: bool = False,
        use_store_path: bool = False,
    ) -> str:
        return _sub(tracking.get_outputs_path(), rel_path, is_dir, ensure_path)

    def get_tensorboard_path(
        self, rel_path: str = "tensorboard", use_store_path: bool = False
    ) -> str:
        path = self.get_outputs_path(rel_path, ensure_path=True, is_dir=True)
        _lineage("tensorboard", path=path)
        return path

    def set_artifacts_path(
        self, artifacts_path: str | None = None, is_related: bool = False
    ) -> None:
        if artifacts_path:
            tracking.init(artifacts_path=artifacts_path)

    # metrics, inputs, outputs ----------------------------------------------------------------
    def log_metric(
        self, name: str, value: Any, step: int | None = None, timestamp: datetime | None = None
    ) -> None:
        tracking.log_metrics(step=step, timestamp=timestamp, **{name: value})

    def log_metrics(
        self, step: int | None = None, timestamp: datetime | None = None, **metrics: Any
    ) -> None:
        tracking.log_metrics(step=step, timestamp=timestamp, **metrics)

    def log_outputs(self, reset: bool = False, async_req: bool = True, **outputs: Any) -> None:
        _log_values("outputs", outputs)

    def log_progress(self, value: float) -> None:
        """How far the job is, from 0 to 1: shown with an ETA by ``get`` and the UI."""
        tracking.log_progress(value)

    def log_inputs(self, reset: bool = False, async_req: bool = True, **inputs: Any) -> None:
        _log_values("inputs", inputs)

    # files -----------------------------------------------------------------------------------
    def log_artifact(
        self,
        path: str,
        name: str | None = None,
        kind: str | None = None,
        summary: dict[str, Any] | None = None,
        step: int | None = None,
        timestamp: datetime | None = None,
        rel_path: str | None = None,
        versioned: bool = True,
        **kwargs: Any,
    ) -> str:
        return self._store(path, name, kind or "file", step, rel_path, summary=summary)

    def log_model(
        self,
        path: str,
        name: str | None = None,
        framework: str | None = None,
        summary: dict[str, Any] | None = None,
        step: int | None = None,
        timestamp: datetime | None = None,
        rel_path: str | None = None,
        versioned: bool = True,
        **kwargs: Any,
    ) -> str:
        return self._store(path, name, "model", step, rel_path, framework=framework)

    def _store(
        self,
        path: str,
        name: str | None,
        kind: str,
        step: int | None,
        rel_path: str | None,
        **facts: Any,
    ) -> str:
        """Copy a file/dir into the run: ``outputs/<rel_path>`` when given, else
        ``assets/<kind>/<name>[_<step>]<ext>``; one lineage line records it."""
        source = Path(path)
        name = name or source.stem or source.name
        if rel_path:
            target = Path(self.get_outputs_path(rel_path, is_dir=True)) / source.name
        else:
            ext = "".join(source.suffixes) if source.is_file() else ""
            target = _asset_path(kind, name, step, ext)
        _copy(source, target)
        _lineage(kind, name=name, path=str(target.relative_to(_artifacts())), step=step, **facts)
        return str(target)

    def _ref(
        self, kind: str, path: str | None = None, name: str | None = None, **facts: Any
    ) -> None:
        _lineage(kind, name=name, path=str(path) if path is not None else None, **facts)

    def log_artifact_ref(
        self, path: str, kind: str = "file", name: str | None = None, **kw: Any
    ) -> None:
        self._ref(kind, path, name, is_input=kw.get("is_input"))

    def log_model_ref(
        self, path: str, name: str | None = None, framework: str | None = None, **kw: Any
    ) -> None:
        self._ref("model", path, name, framework=framework, is_input=kw.get("is_input"))

    def log_file_ref(self, path: str, name: str | None = None, **kw: Any) -> None:
        self._ref("file", path, name, is_input=kw.get("is_input"))

    def log_dir_ref(self, path: str, name: str | None = None, **kw: Any) -> None:
        self._ref("dir", path, name, is_input=kw.get("is_input"))

    def log_tensorboard_ref(self, path: str, name: str = "tensorboard", **kw: Any) -> None:
        self._ref("tensorboard", path, name)

    def log_data_ref(
        self,
        name: str | None = None,
        hash: str | None = None,  # Polyaxon's keyword
        path: str | None = None,
        content: Any = None,
        summary: dict[str, Any] | None = None,
        is_input: bool = True,
    ) -> None:
        digest = hash or (_content_hash(content) if content is not None else None)
        self._ref("data", path, name, hash=digest, is_input=is_input)

    def log_text(
        self, name: str, text: str, step: int | None = None, timestamp: datetime | None = None
    ) -> None:
        _asset_path("text", name, step, ".txt").write_text(str(text), encoding="utf-8")

    def log_html(
        self, name: str, html: str, step: int | None = None, timestamp: datetime | None = None
    ) -> None:
        _asset_path("html", name, step, ".html").write_text(str(html), encoding="utf-8")

    def log_dataframe(
        self,
        df: Any,
        name: str | None = None,
        content_type: str = "csv",
        step: int | None = None,
        timestamp: datetime | None = None,
    ) -> None:
        target = _asset_path("dataframe", name or "dataframe", step, f".{content_type}")
        if content_type == "csv" and hasattr(df, "to_csv"):
            df.to_csv(target)
        elif content_type == "json" and hasattr(df, "to_json"):
            df.to_json(target)
        else:
            target.write_text(str(df), encoding="utf-8")

    def log_tags(self, tags: Any = None, reset: bool = False, async_req: bool = True) -> None:
        _lineage("tags", tags=[tags] if isinstance(tags, str) else list(tags or []))

    def log_meta(self, reset: bool = False, async_req: bool = True, **meta: Any) -> None:
        _lineage("meta", meta=meta)

    def get_log_level(self) -> str | None:
        return os.environ.get("POLYAXON_LOG_LEVEL")

    def end(self) -> None:
        """The runtime ends the run when the process exits; nothing to do."""

    log_code_ref = noop("log_code_ref", "is a no-op: the run records no git state here")
    log_env = noop("log_env", "is a no-op: the run's environment is not uploaded here")
    set_name = noop("set_name", "is a no-op: the run's name is set by the Polyaxonfile/CLI")
    set_description = noop("set_description", "is a no-op here")
    log_status = noop("log_status", "is a no-op: the run's status comes from its process")
    log_succeeded = noop("log_succeeded", "is a no-op: the run's status comes from its process")
    log_stopped = noop("log_stopped", "is a no-op: the run's status comes from its process")
    log_failed = noop("log_failed", "is a no-op: exit non-zero to fail the run")
    log_artifact_lineage = noop("log_artifact_lineage", "is a no-op here")
    set_run_event_logger = noop("set_run_event_logger", "is a no-op here")
    set_run_resource_logger = noop("set_run_resource_logger", "is a no-op here")
    sync_events_summaries = noop("sync_events_summaries", "is a no-op here")
    set_readme = noop("set_readme", "is a no-op: the run has no README page here")
    update = noop("update", "is a no-op: the run's record is written by the runtime")
    push_offline_run = noop("push_offline_run", "is a no-op: runs are local already")
    pull_remote_run = noop("pull_remote_run", "is a no-op: runs are local already")
    promote_to_model_version = noop("promote_to_model_version", "is a no-op: no model registry")
    promote_to_artifact_version = noop(
        "promote_to_artifact_version", "is a no-op: no artifact registry"
    )
    set_run_process_sidecar = noop("set_run_process_sidecar", "is a no-op here")
    sync_system_events_summaries = noop("sync_system_events_summaries", "is a no-op here")
    log_image = noop("log_image", _NO_MEDIA)
    log_image_with_boxes = noop("log_image_with_boxes", _NO_MEDIA)
    log_mpl_image = noop("log_mpl_image", _NO_MEDIA)
    log_video = noop("log_video", _NO_MEDIA)
    log_audio = noop("log_audio", _NO_MEDIA)
    log_histogram = noop("log_histogram", _NO_MEDIA)
    log_np_histogram = noop("log_np_histogram", _NO_MEDIA)
    log_roc_auc_curve = noop("log_roc_auc_curve", _NO_MEDIA)
    log_sklearn_roc_auc_curve = noop("log_sklearn_roc_auc_curve", _NO_MEDIA)
    log_pr_curve = noop("log_pr_curve", _NO_MEDIA)
    log_sklearn_pr_curve = noop("log_sklearn_pr_curve", _NO_MEDIA)
    log_curve = noop("log_curve", _NO_MEDIA)
    log_confusion_matrix = noop("log_confusion_matrix", _NO_MEDIA)
    log_plotly_chart = noop("log_plotly_chart", _NO_MEDIA)
    log_bokeh_chart = noop("log_bokeh_chart", _NO_MEDIA)
    log_altair_chart = noop("log_altair_chart", _NO_MEDIA)
    log_mpl_plotly_chart = noop("log_mpl_plotly_chart", _NO_MEDIA)


def _content_hash(content: Any) -> str:
    import hashlib

    raw = content.tobytes() if callable(getattr(content, "tobytes", None)) else repr(content)
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


# --------------------------------------------------------------------------------------------------
# the legacy (v0.5/0.6) environment facts


def _json_env(name: str) -> Any:
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def data_paths() -> dict[str, str]:
    """``POLYAXON_RUN_DATA_PATHS`` when set, else ``{"data": "<artifacts root>/data"}`` (the
    artifacts root is two levels above the run's directory: ``<root>/<project>/<uuid>``)."""
    given = _json_env("POLYAXON_RUN_DATA_PATHS")
    if isinstance(given, dict):
        return {str(key): str(value) for key, value in given.items()}
    return {"data": str(_artifacts().parent.parent / "data")}


def cluster_def() -> dict[str, list[str]] | None:
    """The replicas by role, as Polyaxon v0 gave them (``POLYAXON_CLUSTER``): from
    ``TF_CONFIG`` (TFJob) or ``MASTER_ADDR``/``WORLD_SIZE`` (PyTorchJob, where only the master's
    address is known); None for a job that is not distributed."""
    given = _json_env("POLYAXON_CLUSTER")
    if isinstance(given, dict):
        return given
    tf = _json_env("TF_CONFIG")
    if isinstance(tf, dict) and isinstance(tf.get("cluster"), dict):
        return {str(role): list(hosts) for role, hosts in tf["cluster"].items()}
    if os.environ.get("MASTER_ADDR") and os.environ.get("WORLD_SIZE"):
        master = f"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT', '')}".rstrip(":")
        workers = max(int(os.environ["WORLD_SIZE"]) - 1, 0)
        return {"master": [master], "worker": [master] * workers}
    return None


def task_info() -> dict[str, Any] | None:
    """``{"type": <role>, "index": <n>}`` of this replica (``POLYAXON_TASK_INFO`` in v0)."""
    given = _json_env("POLYAXON_TASK_INFO")
    if isinstance(given, dict):
        return given
    tf = _json_env("TF_CONFIG")
    if isinstance(tf, dict) and isinstance(tf.get("task"), dict):
        return {"type": tf["task"].get("type"), "index": tf["task"].get("index")}
    if os.environ.get("RANK") is not None and os.environ.get("WORLD_SIZE"):
        rank = int(os.environ["RANK"])
        return (
            {"type": "master", "index": 0} if rank == 0 else {"type": "worker", "index": rank - 1}
        )
    return None


def is_master() -> bool:
    """True unless this process is a distributed replica other than the master/chief."""
    info = task_info()
    return (
        info is None
        or str(info.get("type")) in ("master", "chief")
        or (
            str(info.get("type")) == "worker"
            and "master" not in (cluster_def() or {})
            and "chief" not in (cluster_def() or {})
            and info.get("index") == 0
        )
    )


def tf_config(envvar: str | None = "TF_CONFIG") -> dict[str, Any]:
    """Polyaxon v0's ``get_tf_config``: cluster, task, model dir; exported to ``envvar``."""
    config = {
        "cluster": cluster_def(),
        "task": task_info(),
        "model_dir": tracking.get_outputs_path(),
        "environment": "cloud",
    }
    if envvar:
        os.environ[envvar] = json.dumps(config)
    return config


def experiment_info() -> dict[str, Any]:
    """Polyaxon v0's ``POLYAXON_EXPERIMENT_INFO`` keys, from this run's identity."""
    uuid = os.environ.get(tracking.ENV_RUN_UUID)
    project = os.environ.get(tracking.ENV_PROJECT)
    return {
        "project_name": project,
        "experiment_name": f"{project}.{uuid}",
        "experiment_uuid": uuid,
        "experiment_group_name": None,
        "experiment_group_uuid": None,
        "project_uuid": None,
    }
