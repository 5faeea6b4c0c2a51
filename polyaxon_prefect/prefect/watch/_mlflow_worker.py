"""The MLflow side of the mirror (`_mlflow_mirror`): one thread makes every MLflow call.

Calls are queued (`WORKER.submit`) and made in order by one daemon thread, so a run never waits
on MLflow while it runs; between calls the thread sends the new lines of every running job's
``metrics.jsonl`` (`POLL_SECONDS`). MLflow is imported here, by that thread, when the first run
is created: never by ``import polyaxon_prefect``, ``check`` or a run without the mirror.

A `Session` is one top-level run and everything under it: its client, and the one line its log
shows when the mirror fails (MLflow not installed, a bad URI, a server that does not answer),
after which nothing more is sent for it. An ``http(s)`` server is first asked for a TCP
connection (`_probe`): a server that is down costs a second, not MLflow's minutes of retries.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from polyaxon_prefect.prefect.watch import _mlflow_values as values

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from polyaxon_prefect.prefect._settings import RunLogger

__all__ = [
    "POLL_SECONDS",
    "WORKER",
    "MirroredRun",
    "RunEnd",
    "Session",
    "Unusable",
    "create_run",
    "finish_run",
    "reopen_run",
]

POLL_SECONDS = 2.0
"""How often the new lines of a running job's metrics file are sent."""
PROBE_SECONDS = 5.0
_HEAD_BYTES = 128


class Unusable(Exception):
    """The mirror cannot work at all: its message is the line the run's log shows."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _probe(uri: str) -> None:
    """A server URI that takes no TCP connection is refused now (MLflow itself would retry
    each call for minutes)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise Unusable(f"{uri} is not a valid URI ({exc})") from exc
    if not host:
        raise Unusable(f"{uri} names no host")
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            pass
    except OSError as exc:
        raise Unusable(f"no server answers at {host}:{port} ({exc.strerror or exc})") from exc


def _reason(error: BaseException) -> str:
    if isinstance(error, Unusable):
        return str(error)
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= 400 else text[:397] + "..."


class Session:
    """A top-level run and everything under it: one client, one line when the mirror fails
    (``mask`` hides what the line must not show: the URI's credentials)."""

    def __init__(self, uri: str, logger: RunLogger, mask: Callable[[str], str]) -> None:
        self.uri = uri
        self.logger = logger
        self.mask = mask
        self.broken = False
        self._client: MlflowClient | None = None
        self._experiments: dict[str, str] = {}

    def client(self) -> MlflowClient:
        if self._client is None:
            _probe(self.uri)
            try:
                from mlflow.tracking import MlflowClient
            except ImportError as exc:
                raise Unusable(
                    "the `mlflow` package is not installed (pip install 'polyaxon-prefect[mlflow]')"
                ) from exc
            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    def experiment_id(self, name: str) -> str:
        """The id of the experiment ``name`` (the run's project), created when missing."""
        found = self._experiments.get(name)
        if found is None:
            found = self._experiments[name] = _experiment_id(self.client(), name)
        return found

    def fail(self, error: BaseException) -> None:
        if self.broken:
            return
        self.broken = True
        line = f"MLflow mirror stopped ({self.uri}): {_reason(error)}; the run goes on without it"
        self.logger.warning(self.mask(line))


def _experiment_id(client: MlflowClient, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return str(experiment.experiment_id)
    try:
        return str(client.create_experiment(name))
    except Exception:  # another run created it meanwhile: read it again, else it is an error
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return str(experiment.experiment_id)


@dataclass(eq=False)
class MirroredRun:
    """One mirrored run; its MLflow fields are the worker thread's alone."""

    session: Session
    name: str
    experiment: str
    params: dict[str, str]
    tags: dict[str, str]
    parent: MirroredRun | None = None
    metrics_path: Path | None = None
    started_ms: int = field(default_factory=lambda: _now_ms())
    """When it started (the worker may create it in MLflow later)."""
    run_id: str | None = None
    offset: int = 0
    head: bytes = b""
    """The first bytes of the metrics file read so far (`_tail`)."""
    logged: set[str] = field(default_factory=set)
    """The metric keys its metrics file gave (an output of one of these names is not a
    metric again)."""


@dataclass(frozen=True)
class RunEnd:
    status: str
    tags: dict[str, str]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)
    artifacts: Path | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    """Params known only at the end (a sweep's: those its trials did not set)."""
    ended_ms: int = field(default_factory=lambda: _now_ms())


# ----------------------------------------------------------------------------- MLflow calls


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def create_run(run: MirroredRun) -> None:
    client = run.session.client()  # first: a server that is down is said before MLflow loads
    from mlflow.entities import Param

    tags = dict(run.tags)
    parent = run.parent
    if parent is not None and parent.run_id is not None:
        tags["mlflow.parentRunId"] = parent.run_id
    experiment_id = run.session.experiment_id(run.experiment)
    created = client.create_run(
        experiment_id, start_time=run.started_ms, tags=tags, run_name=run.name
    )
    run.run_id = created.info.run_id
    params = [Param(key, value) for key, value in run.params.items()]
    for batch in _batches(params, values.MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run.run_id, params=batch)
    WORKER.follow(run)


def reopen_run(run: MirroredRun) -> None:
    """A new attempt of a retried job: the same MLflow run runs again, its metrics file anew."""
    if run.run_id is None:
        create_run(run)
        return
    run.session.client().update_run(run.run_id, status="RUNNING")
    WORKER.follow(run)


def _tail(path: Path, offset: int, head: bytes) -> tuple[list[dict[str, Any]], int, bytes]:
    """The records of the complete lines appended since ``offset``, the next offset and the
    file's first bytes (``head``: the last ones seen). A file that no longer starts with them
    is a new one (each attempt of a retried job starts its own, stamped lines first): it is
    read from its start."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(_HEAD_BYTES)
            if start[: len(head)] != head or os.fstat(handle.fileno()).st_size < offset:
                offset = 0
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return [], offset, head
    end = chunk.rfind(b"\n")
    if end < 0:
        return [], offset, start
    records = []
    for raw in chunk[: end + 1].splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(raw)
            if isinstance(record, dict):
                records.append(record)
    return records, offset + end + 1, start


def _send_metrics(run: MirroredRun) -> None:
    if run.run_id is None or run.metrics_path is None:
        return
    records, run.offset, run.head = _tail(run.metrics_path, run.offset, run.head)
    points = values.metric_points(records, _now_ms())
    if not points:
        return
    from mlflow.entities import Metric

    metrics = [Metric(key, value, stamp, step) for key, value, stamp, step in points]
    for batch in _batches(metrics, values.MAX_METRICS_PER_BATCH):
        run.session.client().log_batch(run.run_id, metrics=batch)
    run.logged.update(point[0] for point in points)


def finish_run(run: MirroredRun, end: RunEnd) -> None:
    from mlflow.entities import Metric, Param, RunTag

    WORKER.unfollow(run)
    if run.run_id is None:
        return
    client = run.session.client()
    _send_metrics(run)
    params = [Param(key, value) for key, value in end.params.items()]
    for batch in _batches(params, values.MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run.run_id, params=batch)
    numbers, tags = values.output_values(end.outputs, run.logged)
    extra, _ = values.output_values(end.metrics, [*run.logged, *numbers])
    ended = end.ended_ms
    metrics = [Metric(key, value, ended, 0) for key, value in {**extra, **numbers}.items()]
    for batch in _batches(metrics, values.MAX_METRICS_PER_BATCH):
        client.log_batch(run.run_id, metrics=batch)
    if end.artifacts is not None and end.artifacts.is_dir():
        skipped = _log_files(client, run.run_id, end.artifacts)
        if skipped:
            tags["polyaxon.artifacts_skipped"] = values.tag_value("; ".join(skipped))
    run_tags = [RunTag(key, value) for key, value in {**tags, **end.tags}.items()]
    for batch in _batches(run_tags, values.MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run.run_id, tags=batch)
    _terminate(client, run.run_id, end.status, end.ended_ms)


def _log_files(client: MlflowClient, run_id: str, root: Path) -> list[str]:
    """Every regular file of the run folder as the run's artifact, at its place in the folder;
    a link is never followed (a job could point one at any file of this machine) but named in
    what it returns, as is a FIFO or a device."""
    from polyaxon_prefect.client.run_files._copy_files import tree_files

    files, skipped = tree_files(root)
    for relative in files:
        path = root / relative
        try:
            regular = stat.S_ISREG(os.lstat(path).st_mode)
        except FileNotFoundError:
            continue  # removed since the folder was read
        if not regular:  # replaced by a link since
            skipped.append(f"skipped {relative.as_posix()}: not a regular file, not copied")
            continue
        folder = relative.parent.as_posix()
        client.log_artifact(run_id, str(path), None if folder == "." else folder)
    return skipped


def _terminate(client: MlflowClient, run_id: str, status: str, ended_ms: int) -> None:
    """`MlflowClient.set_terminated`'s own store call, without the two "View run" lines it
    writes to stdout for a server (they would come before ``run --json``'s JSON)."""
    from mlflow.entities import RunStatus

    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if store is None:  # an MLflow without that attribute: the public call, lines and all
        client.set_terminated(run_id, status, ended_ms)
        return
    store.update_run_info(
        run_id, run_status=RunStatus.from_string(status), end_time=ended_ms, run_name=None
    )


# ----------------------------------------------------------------------------- the worker


class _Worker:
    """The one thread that talks to MLflow: queued calls in order, and the running jobs'
    metrics files read every `POLL_SECONDS` between them."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Session | None, Callable[[], None]]] = (
            queue.SimpleQueue()
        )
        self._following: dict[int, MirroredRun] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, session: Session, call: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="polyaxon-prefect-mlflow", daemon=True
                )
                self._thread.start()
        self._queue.put((session, call))

    def flush(self, timeout: float) -> bool:
        """Wait until what was queued before is done; False: not within ``timeout``."""
        done = threading.Event()
        self._queue.put((None, done.set))
        return done.wait(timeout)

    def follow(self, run: MirroredRun) -> None:
        if run.metrics_path is not None:
            with self._lock:
                self._following[id(run)] = run

    def unfollow(self, run: MirroredRun) -> None:
        with self._lock:
            self._following.pop(id(run), None)

    def _loop(self) -> None:
        next_poll = time.monotonic() + POLL_SECONDS
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_poll - time.monotonic()))
            except queue.Empty:
                item = None
            if item is not None:
                self._do(*item)
            if time.monotonic() >= next_poll:
                with self._lock:
                    running = list(self._following.values())
                for run in running:
                    self._do(run.session, functools.partial(_send_metrics, run))
                next_poll = time.monotonic() + POLL_SECONDS

    @staticmethod
    def _do(session: Session | None, call: Callable[[], None]) -> None:
        if session is not None and session.broken:
            return
        try:
            call()
        except Exception as exc:  # the mirror's failure is never the run's
            if session is not None:
                session.fail(exc)


WORKER = _Worker()
