"""A run in MLflow's terms, without MLflow: keys, params, tags, metric points and statuses.

Pure (values in, plain values out), so `_mlflow_mirror` only moves what this decides. MLflow
refuses a whole batch for one bad key or one value over its limits, so everything a run sends
is made valid here: keys keep MLflow's characters (letters, digits, ``_ - . / space``; a colon
only where MLflow allows it, not on every platform), values are cut to MLflow's lengths.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from polyaxon_prefect.specs import Status

__all__ = [
    "MAX_METRICS_PER_BATCH",
    "MAX_PARAMS_TAGS_PER_BATCH",
    "MetricPoint",
    "end_tags",
    "metric_key",
    "metric_points",
    "mlflow_status",
    "output_values",
    "param_values",
    "start_tags",
    "tag_value",
]

MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
_MAX_KEY = 250
_MAX_PARAM = 6000
_MAX_TAG = 8000
_BAD_KEY_CHARS = re.compile(r"[^\w./\- ]")
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

MetricPoint = tuple[str, float, int, int]
"""``(key, value, timestamp in ms, step)``: one point of a metric's history."""

_STATUSES = {
    Status.SUCCEEDED: "FINISHED",
    Status.FAILED: "FAILED",
    Status.UPSTREAM_FAILED: "FAILED",
    Status.STOPPED: "KILLED",
    Status.SKIPPED: "KILLED",
}


def mlflow_status(status: str) -> str:
    """MLflow's end status of a run that ended ``status`` (MLflow has no skipped: KILLED)."""
    return _STATUSES.get(Status(status), "FAILED")


def metric_key(name: str) -> str:
    """``name`` as a valid MLflow key: other characters become ``_``; a ``/`` stays where it
    groups (``train/loss``), not where MLflow would read it as a path (``/x``, ``a//b``)."""
    key = _BAD_KEY_CHARS.sub("_", str(name))[:_MAX_KEY] or "_"
    normal = posixpath.normpath(key)
    if normal != key or normal in (".", "..") or key.startswith(("/", "..")):
        key = key.replace("/", "_")
        if key in (".", "..") or key.startswith(".."):
            key = "_" + key[1:]
    return key


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def param_values(params: Mapping[str, Any]) -> dict[str, str]:
    """A run's params as MLflow's (strings: a string as is, anything else as JSON)."""
    return {metric_key(name): _cut(_text(value), _MAX_PARAM) for name, value in params.items()}


def tag_value(value: object) -> str:
    """``value`` as a tag's text, cut to MLflow's length."""
    return _cut(_text(value), _MAX_TAG)


def start_tags(
    *,
    uuid: str,
    project: str,
    op: str,
    kind: str,
    tags: Iterable[str] = (),
    description: str | None = None,
    username: str | None = None,
    iteration: int | None = None,
    artifacts_path: str | None = None,
) -> dict[str, str]:
    """The tags a run starts with: who it is in Polyaxon (``polyaxon.*``), its Polyaxon tags
    (each its own key, valid ones only, and all of them in ``polyaxon.tags``), MLflow's own
    ``mlflow.note.content`` (its description) and ``mlflow.user``."""
    names = [str(t) for t in tags if t]
    found = {name: "" for name in names if metric_key(name) == name}  # ours below win
    found.update({"polyaxon.uuid": uuid, "polyaxon.project": project})
    found.update({"polyaxon.op": op, "polyaxon.kind": kind})
    if names:
        found["polyaxon.tags"] = tag_value(",".join(names))
    if iteration is not None:
        found["polyaxon.iteration"] = str(iteration)
    if artifacts_path:
        found["polyaxon.artifacts_path"] = tag_value(artifacts_path)
    if description:
        found["mlflow.note.content"] = tag_value(description)
    if username:
        found["mlflow.user"] = tag_value(username)
    return found


def end_tags(
    status: str,
    message: str,
    *,
    flow_run_id: str | None = None,
    flow_run_url: str | None = None,
    cached_from: str | None = None,
) -> dict[str, str]:
    """The tags a run ends with: its Polyaxon status and message (MLflow's status is coarser),
    its Prefect flow run, and the run whose outputs a cache hit reused."""
    found = {"polyaxon.status": str(status)}
    if message:
        found["polyaxon.message"] = tag_value(message)
    if flow_run_id:
        found["prefect.flow_run_id"] = flow_run_id
    if flow_run_url:
        found["prefect.flow_run_url"] = tag_value(flow_run_url)
    if cached_from:
        found["polyaxon.cached_from"] = cached_from
    return found


def _number(value: object) -> float | None:
    if isinstance(value, str):
        value = _NON_FINITE.get(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _millis(stamp: object, default: int) -> int:
    if not isinstance(stamp, str):
        return default
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return default


def metric_points(records: Iterable[Mapping[str, Any]], now_ms: int) -> list[MetricPoint]:
    """The points of ``metrics.jsonl`` records (`polyaxon_prefect.tracking`): each number of a
    record at its step (0 when it has none, as MLflow's own default) and its time."""
    points: list[MetricPoint] = []
    for record in records:
        step = record.get("step")
        step = step if isinstance(step, int) and not isinstance(step, bool) else 0
        stamp = _millis(record.get("timestamp"), now_ms)
        for name, raw in record.items():
            value = None if name in ("step", "timestamp") else _number(raw)
            if value is not None:
                points.append((metric_key(name), value, stamp, step))
    return points


def output_values(
    outputs: Mapping[str, Any], logged: Iterable[str]
) -> tuple[dict[str, float], dict[str, str]]:
    """A run's outputs as MLflow holds them: a number as a metric, unless the run logged a
    metric of that name (its history stays that metric's alone); any other output, and such a
    number, as a ``polyaxon.output.<name>`` tag."""
    seen = set(logged)
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for name, value in outputs.items():
        number = _number(value) if not isinstance(value, str) else None
        key = metric_key(name)
        if number is not None and key not in seen:
            metrics[key] = number
        else:
            tags[f"polyaxon.output.{key}"] = tag_value(value)
    return metrics, tags
