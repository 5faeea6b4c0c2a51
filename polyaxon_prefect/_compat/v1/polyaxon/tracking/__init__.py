"""``from polyaxon import tracking``: Polyaxon v1/v2's module API on this run.

Each function calls the same method of the module's run (`TRACKING_RUN`), created by `init` or
by the first call; see `polyaxon.tracking.run.Run` for what each one does here.
"""

from __future__ import annotations

from typing import Any

from _polyaxon_prefect_compat import Run

TRACKING_RUN: Run | None = None

_METHODS = (
    "get_artifacts_path",
    "get_outputs_path",
    "get_tensorboard_path",
    "set_artifacts_path",
    "set_run_event_logger",
    "set_run_resource_logger",
    "log_metric",
    "log_metrics",
    "log_roc_auc_curve",
    "log_sklearn_roc_auc_curve",
    "log_pr_curve",
    "log_sklearn_pr_curve",
    "log_curve",
    "log_confusion_matrix",
    "log_image",
    "log_image_with_boxes",
    "log_mpl_image",
    "log_video",
    "log_audio",
    "log_text",
    "log_html",
    "log_np_histogram",
    "log_histogram",
    "log_model",
    "log_artifact",
    "log_dataframe",
    "log_plotly_chart",
    "log_bokeh_chart",
    "log_altair_chart",
    "log_mpl_plotly_chart",
    "get_log_level",
    "set_description",
    "set_name",
    "end",
    "log_status",
    "log_inputs",
    "log_outputs",
    "log_tags",
    "log_meta",
    "log_progress",
    "log_succeeded",
    "log_stopped",
    "log_failed",
    "log_artifact_ref",
    "log_model_ref",
    "log_code_ref",
    "log_data_ref",
    "log_file_ref",
    "log_dir_ref",
    "log_tensorboard_ref",
    "log_artifact_lineage",
    "log_env",
    "sync_events_summaries",
    "get_inputs",
    "get_outputs",
    "set_readme",
    "update",
    "push_offline_run",
    "pull_remote_run",
    "promote_to_model_version",
    "promote_to_artifact_version",
    "set_run_process_sidecar",
    "sync_system_events_summaries",
)

__all__ = ["TRACKING_RUN", "Run", "get_or_create_run", "init", *_METHODS]


def init(
    owner: str | None = None,
    project: str | None = None,
    run_uuid: str | None = None,
    client: Any = None,
    track_code: bool = True,
    track_env: bool = True,
    refresh_data: bool = False,
    artifacts_path: str | None = None,
    *args: Any,
    **kwargs: Any,
) -> Run:
    """The run of this process (Polyaxon's auth, offline mode and code/env tracking have no
    meaning here and are ignored)."""
    global TRACKING_RUN
    TRACKING_RUN = Run(
        owner=owner, project=project, run_uuid=run_uuid, artifacts_path=artifacts_path
    )
    return TRACKING_RUN


def get_or_create_run(tracking_run: Run | None = None) -> Run:
    """``tracking_run`` if given, else the module's run (made on first use)."""
    if tracking_run is not None:
        return tracking_run
    return TRACKING_RUN if TRACKING_RUN is not None else init()


def _delegate(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(get_or_create_run(), name)(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = getattr(Run, name).__doc__
    return call


for _name in _METHODS:
    globals()[_name] = _delegate(_name)
del _name
