"""Log outputs and metrics from a training script run by ``polyaxon-prefect``.

Shaped like Polyaxon's tracking client, so a script ports by changing one import::

    from polyaxon_prefect import tracking  # was: from polyaxon import tracking

    tracking.init()
    params = tracking.get_params()
    for step in range(10):
        tracking.log_metrics(step=step, loss=0.1 * step)
    tracking.log_outputs(accuracy=0.93)

This module only uses the standard library and imports nothing heavy: it is loaded by user code
inside the op's process, not by the runtime.

The contract (any language can follow it, this module is just one client):

Environment variables set for every op process:

- ``POLYAXON_PREFECT_RUN_UUID``: the run's id (32 hex chars).
- ``POLYAXON_PREFECT_RUN_NAME``: the run's name.
- ``POLYAXON_PREFECT_PROJECT``: the project name.
- ``POLYAXON_PREFECT_RUN_ARTIFACTS_PATH``: a directory owned by the run; write any files there.
- ``POLYAXON_PREFECT_RUN_OUTPUTS_PATH``: ``<artifacts path>/outputs``; holds the two files below.
- ``POLYAXON_PREFECT_ITERATION``: the trial index, only for runs of a matrix.
- ``POLYAXON_PREFECT_PARAMS``: a JSON object with the op's resolved params (inputs and outputs
  that have values), e.g. ``{"learning_rate": 0.01}``.
- Polyaxon's own names for the same facts, so code written for Polyaxon keeps working:
  ``POLYAXON_RUN_OUTPUTS_PATH`` and ``POLYAXON_PARAMS`` (Polyaxon v0.x), and
  ``POLYAXON_RUN_INSTANCE`` = ``<owner>.<project>.runs.<uuid>`` (Polyaxon v1+).
- ``POLYAXON_PREFECT_PREVIOUS_OUTPUTS_PATH``: only in a new attempt of a cluster run whose pod
  the cluster took away (preempted, evicted, its node lost): the outputs path of the attempt
  before, where its checkpoints are if it wrote them there and that path outlives a pod (a
  volume, not the pod's own disk). `get_previous_outputs_path` reads it.

Files under the outputs path:

- ``outputs.json``: one JSON object ``{"<output name>": <JSON value>, ...}``. Replace it whole
  (write a temporary file in the same directory, then rename it over the old one) so a reader
  never sees half a file. After the process ends, each key must be an output declared by the
  component, with a value of the declared type; declared outputs that are not optional must be
  present.
- ``metrics.jsonl``: one JSON object per line, appended:
  ``{"step": <int or null>, "timestamp": "<ISO 8601 UTC>", "<metric name>": <number>, ...}``.
  Numbers that JSON cannot hold are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
- ``progress.json``: ``{"progress": <number from 0 to 1>, "timestamp": "<ISO 8601 UTC>"}``,
  replaced whole like ``outputs.json``: how far the job says it is (`log_progress`); the
  runtime shows it with an ETA while the job runs.

Run by hand (no ``POLYAXON_PREFECT_RUN_OUTPUTS_PATH`` in the environment), this module writes
under ``./.polyaxon-prefect-run/`` (outputs in its ``outputs/`` subdirectory) and warns once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_ARTIFACTS_PATH",
    "ENV_OUTPUTS_PATH",
    "ENV_PARAMS",
    "ENV_PREVIOUS_OUTPUTS_PATH",
    "ENV_PROJECT",
    "ENV_RUN_NAME",
    "ENV_RUN_UUID",
    "LOCAL_RUN_DIR",
    "METRICS_FILE",
    "OUTPUTS_FILE",
    "POLYAXON_ENV_OUTPUTS_PATH",
    "POLYAXON_ENV_PARAMS",
    "POLYAXON_ENV_RUN_INSTANCE",
    "PROGRESS_FILE",
    "get_artifacts_path",
    "get_last_metrics",
    "get_outputs",
    "get_outputs_path",
    "get_params",
    "get_previous_outputs_path",
    "init",
    "log_metric",
    "log_metrics",
    "log_outputs",
    "log_progress",
    "read_metrics_file",
    "read_progress_file",
]

ENV_RUN_UUID = "POLYAXON_PREFECT_RUN_UUID"
ENV_RUN_NAME = "POLYAXON_PREFECT_RUN_NAME"
ENV_PROJECT = "POLYAXON_PREFECT_PROJECT"
ENV_ARTIFACTS_PATH = "POLYAXON_PREFECT_RUN_ARTIFACTS_PATH"
ENV_OUTPUTS_PATH = "POLYAXON_PREFECT_RUN_OUTPUTS_PATH"
ENV_PARAMS = "POLYAXON_PREFECT_PARAMS"
ENV_PREVIOUS_OUTPUTS_PATH = "POLYAXON_PREFECT_PREVIOUS_OUTPUTS_PATH"
POLYAXON_ENV_OUTPUTS_PATH = "POLYAXON_RUN_OUTPUTS_PATH"
POLYAXON_ENV_PARAMS = "POLYAXON_PARAMS"
POLYAXON_ENV_RUN_INSTANCE = "POLYAXON_RUN_INSTANCE"

OUTPUTS_FILE = "outputs.json"
METRICS_FILE = "metrics.jsonl"
PROGRESS_FILE = "progress.json"
LOCAL_RUN_DIR = ".polyaxon-prefect-run"

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

_state: dict[str, Any] = {"artifacts": None, "outputs": None, "warned": False}


def init(
    *, artifacts_path: str | os.PathLike[str] | None = None, outputs_path: str | None = None
) -> None:
    """Pin where this process logs; optional, every function reads the environment lazily.

    Without arguments it only checks the environment (and warns once when there is no run).
    Passing paths overrides the environment, e.g. to log somewhere chosen when run by hand.
    """
    if artifacts_path is not None:
        _state["artifacts"] = Path(artifacts_path)
        if outputs_path is None:
            _state["outputs"] = Path(artifacts_path) / "outputs"
    if outputs_path is not None:
        _state["outputs"] = Path(outputs_path)
    get_outputs_path()


def _in_run() -> bool:
    return bool(os.environ.get(ENV_OUTPUTS_PATH) or os.environ.get(POLYAXON_ENV_OUTPUTS_PATH))


def _warn_local() -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(
            f"not running under polyaxon-prefect ({ENV_OUTPUTS_PATH} is not set); outputs and "
            f"metrics are written under ./{LOCAL_RUN_DIR}/",
            RuntimeWarning,
            stacklevel=3,
        )


def get_artifacts_path() -> str:
    """The run's own directory for any files (created if missing)."""
    if _state["artifacts"] is not None:
        path = Path(_state["artifacts"])
    elif os.environ.get(ENV_ARTIFACTS_PATH):
        path = Path(os.environ[ENV_ARTIFACTS_PATH])
    elif _in_run():
        path = Path(get_outputs_path()).parent
    else:
        _warn_local()
        path = Path(LOCAL_RUN_DIR).absolute()
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def get_outputs_path() -> str:
    """The directory holding ``outputs.json`` and ``metrics.jsonl`` (created if missing)."""
    if _state["outputs"] is not None:
        path = Path(_state["outputs"])
    elif os.environ.get(ENV_OUTPUTS_PATH):
        path = Path(os.environ[ENV_OUTPUTS_PATH])
    elif os.environ.get(POLYAXON_ENV_OUTPUTS_PATH):
        path = Path(os.environ[POLYAXON_ENV_OUTPUTS_PATH])
    else:
        _warn_local()
        path = Path(LOCAL_RUN_DIR).absolute() / "outputs"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def get_previous_outputs_path() -> str | None:
    """Where the previous attempt of this run left its outputs (its checkpoints, to resume
    from), when the cluster took that attempt away; None in a first attempt."""
    return os.environ.get(ENV_PREVIOUS_OUTPUTS_PATH) or None


def get_params() -> dict[str, Any]:
    """The op's resolved params (``{}`` when run by hand)."""
    raw = os.environ.get(ENV_PARAMS) or os.environ.get(POLYAXON_ENV_PARAMS)
    if not raw:
        if not _in_run():
            _warn_local()
        return {}
    params = json.loads(raw)
    if not isinstance(params, dict):
        raise ValueError(f"{ENV_PARAMS} must hold a JSON object, got {raw[:80]!r}")
    return params


def _to_json(value: object) -> Any:
    # numpy/torch scalars and arrays are the common non-JSON values in training code.
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _dumps_output(name: str, value: object) -> str:
    try:
        return json.dumps(value, default=_to_json, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"output `{name}` must be JSON serialisable (numbers, strings, booleans, null, "
            f"lists, dicts), got {type(value).__name__} {value!r:.80}: {exc}"
        ) from exc


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Serialise read-merge-write of ``outputs.json`` between processes (POSIX only)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: best effort, no lock
        yield
        return
    with open(directory / ".outputs.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object, found {type(data).__name__}")
    return data


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def log_outputs(**values: object) -> None:
    """Record output values; merged into ``outputs.json`` (a later value for a name wins)."""
    encoded = {name: json.loads(_dumps_output(name, value)) for name, value in values.items()}
    directory = Path(get_outputs_path())
    with _locked(directory):
        path = directory / OUTPUTS_FILE
        current = _read_json_object(path)
        current.update(encoded)
        _write_atomic(path, json.dumps(current, indent=2, sort_keys=True) + "\n")


def get_outputs() -> dict[str, Any]:
    """The outputs logged so far by this run."""
    return _read_json_object(Path(get_outputs_path()) / OUTPUTS_FILE)


def _metric_number(name: str, value: Any) -> int | float | str:
    if isinstance(value, bool | str | bytes):
        raise TypeError(f"metric `{name}` must be a number, got {type(value).__name__} {value!r}")
    if isinstance(value, int):
        return value
    try:
        number = float(value)  # floats, numpy scalars, 0-d tensors
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"metric `{name}` must be a number, got {type(value).__name__} {value!r:.80}"
        ) from exc
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def log_metrics(
    step: int | None = None, timestamp: datetime | None = None, **values: object
) -> None:
    """Append one line to ``metrics.jsonl`` with every metric value given (numbers only)."""
    if not values:
        return
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise TypeError(f"step must be an int or None, got {type(step).__name__} {step!r}")
    for reserved in ("step", "timestamp"):
        if reserved in values:  # pragma: no cover - Python binds them to the parameters
            raise TypeError(f"`{reserved}` cannot be used as a metric name")
    when = (timestamp or datetime.now(timezone.utc)).isoformat()  # noqa: UP017 - py3.10 readers
    record: dict[str, Any] = {"step": step, "timestamp": when}
    record.update({name: _metric_number(name, value) for name, value in values.items()})
    line = json.dumps(record, allow_nan=False) + "\n"
    path = Path(get_outputs_path()) / METRICS_FILE
    # One write() on an O_APPEND file: concurrent writers' lines do not interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def log_metric(
    name: str, value: object, step: int | None = None, timestamp: datetime | None = None
) -> None:
    """Log one metric value; same as ``log_metrics(step=step, **{name: value})``."""
    log_metrics(step=step, timestamp=timestamp, **{name: value})


def _decode_metric(value: object) -> Any:
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    return value


def read_metrics_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of a ``metrics.jsonl`` file, non-finite markers turned back into floats.

    A line that is not a JSON object (typically the last one, cut short when the process was
    killed) is skipped.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    records = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(
                {
                    key: value if key in ("step", "timestamp") else _decode_metric(value)
                    for key, value in record.items()
                }
            )
    return records


def get_last_metrics(records: list[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The last logged value of each metric of this run (or of ``records``)."""
    if records is None:
        records = list(read_metrics_file(Path(get_outputs_path()) / METRICS_FILE))
    last: dict[str, Any] = {}
    for record in records:
        for key, value in record.items():
            if key not in ("step", "timestamp"):
                last[key] = value
    return last


def log_progress(value: float) -> None:
    """Say how far the job is, from 0 to 1 (Polyaxon's ``log_progress``): ``get --json``, the
    Prefect UI's progress artifact and the terminal show it, with an ETA at the rate so far.
    Each call replaces the last."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"progress must be a number from 0 to 1, got {type(value).__name__}")
    if not 0 <= value <= 1:
        raise ValueError(f"progress must be from 0 to 1, got {value!r}")
    when = datetime.now(timezone.utc).isoformat()  # noqa: UP017 - py3.10 readers
    record = {"progress": float(value), "timestamp": when}
    _write_atomic(Path(get_outputs_path()) / PROGRESS_FILE, json.dumps(record) + "\n")


def read_progress_file(path: str | os.PathLike[str]) -> tuple[float, str] | None:
    """``(fraction, timestamp)`` of a ``progress.json``; None when there is none (the job
    never called `log_progress`) or it does not hold one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("progress") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        return None
    return float(value), str(data.get("timestamp") or "")
