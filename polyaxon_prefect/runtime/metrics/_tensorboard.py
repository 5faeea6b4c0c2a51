"""Every run's step metrics as TensorBoard event files, from unchanged training code.

A run's process appends to ``<outputs>/metrics.jsonl`` (`polyaxon_prefect.tracking`); while it
runs, `metric_events` follows that file and writes each new line as TensorBoard scalars into
``<outputs>/tensorboard/metrics/`` (one event file, one writer per run), so::

    tensorboard --logdir <artifacts root>/<project>

shows every run, DAG op and sweep trial side by side (and the hub ``tensorboard`` component,
which reads a run's ``outputs``, shows them too). A distributed run's main replica (rank 0)
logs where a job would; another replica gets event files of its own only when it logs metrics
itself (under ``replicas/<name>/outputs/``).

The event files mirror the file: an attempt that starts again (a retry) drops the earlier
attempt's events with its ``metrics.jsonl``. A value logged without a ``step`` takes the next
step of its metric (0, 1, 2...). TensorBoard is an optional extra (``pip install
'polyaxon-prefect[tensorboard]'``): without it the run works and one line says no event file
was written; ``POLYAXON_PREFECT_TENSORBOARD=false`` turns the mirror off. Writing never fails a
run: a problem is one line, and the mirror stops.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from polyaxon_prefect.runtime.session._spare_threads import run_in_thread
from polyaxon_prefect.tracking import METRICS_FILE

__all__ = [
    "ENV_TENSORBOARD",
    "EVENTS_DIR",
    "MetricEvents",
    "events_path",
    "metric_events",
    "tensorboard_installed",
]

ENV_TENSORBOARD = "POLYAXON_PREFECT_TENSORBOARD"
"""``false`` (or ``0``, ``no``, ``off``): no event files are written."""
EVENTS_DIR = ("tensorboard", "metrics")
"""Where a run's event files go, under its outputs path."""
_EVENTS_PREFIX = "events.out.tfevents."
_POLL_SECONDS = 1.0
_OFF = frozenset({"0", "false", "no", "off"})


def events_path(outputs_path: str | os.PathLike[str]) -> Path:
    """The folder of the event files mirroring the ``metrics.jsonl`` in ``outputs_path``."""
    return Path(outputs_path).joinpath(*EVENTS_DIR)


_INSTALLED = False
"""TensorBoard was found once: it is not looked for again (a search of every folder of the
path, per op). Not found is not kept: the warm runner lives on while a user installs it."""


def tensorboard_installed() -> bool:
    """Whether TensorBoard's event writer can be imported (the ``tensorboard`` extra)."""
    global _INSTALLED
    if not _INSTALLED:
        try:
            _INSTALLED = importlib.util.find_spec("tensorboard") is not None
        except (ImportError, ValueError):
            return False
    return _INSTALLED


def _enabled() -> bool:
    return os.environ.get(ENV_TENSORBOARD, "").strip().lower() not in _OFF


def _wall_time(timestamp: object) -> float:
    if isinstance(timestamp, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(timestamp).timestamp()
    return time.time()


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: CRC-32C (Castagnoli) of ``data``, masked. Written here because
    TensorBoard's own (``record_writer``) imports its TensorFlow stub, ten times slower to
    load than the event protos alone; the tests check both agree."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tf_record(data: bytes) -> bytes:
    """One TFRecord: length, its checksum, the data, its checksum (little-endian)."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


class _Writer:
    """One event file, written synchronously (TensorBoard's record framing; no thread)."""

    def __init__(self, folder: Path) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        self._event = event_pb2.Event
        self._summary = summary_pb2.Summary
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{_EVENTS_PREFIX}{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}"
        self._file = open(folder / f"{name}.{id(self)}", "wb")  # noqa: SIM115 - closed in close()
        first = self._event(wall_time=time.time(), file_version="brain.Event:2")
        self._file.write(tf_record(first.SerializeToString()))

    def scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        summary = self._summary(value=[self._summary.Value(tag=tag, simple_value=value)])
        event = self._event(wall_time=wall_time, step=step, summary=summary)
        self._file.write(tf_record(event.SerializeToString()))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class MetricEvents:
    """The event files of one ``metrics.jsonl``: `sync` writes the lines added since the last
    call (only whole lines: the one being written waits for the next call).

    ``skip_existing``: the file there now is an earlier attempt's, which the executor is about
    to drop: it is never mirrored (only a file written after it)."""

    def __init__(
        self, outputs_path: str | os.PathLike[str], *, skip_existing: bool = False
    ) -> None:
        self.source = Path(outputs_path) / METRICS_FILE
        self.folder = events_path(outputs_path)
        self.written = 0
        self._writer: _Writer | None = None
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        self._steps: dict[str, int] = {}
        self._stale = self._stat_key() if skip_existing else None

    def _stat_key(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.source)
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def reset(self) -> None:
        """Forget what was mirrored and drop its event files (a new attempt's file)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.folder.is_dir():
            for path in self.folder.glob(f"{_EVENTS_PREFIX}*"):
                path.unlink(missing_ok=True)
        self._offset, self._identity, self._steps, self.written = 0, None, {}, 0

    def sync(self) -> int:
        """Write the whole lines added since the last call; how many values were written."""
        key = self._stat_key()
        # an earlier attempt's file, about to be replaced: never mirrored
        if key is None or key == self._stale:
            return 0
        self._stale = None
        if key[:2] != self._identity or key[2] < self._offset:  # a new file: a new attempt
            self.reset()
            self._identity = key[:2]
        if key[2] == self._offset:
            return 0
        with open(self.source, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read(key[2] - self._offset)
        end = chunk.rfind(b"\n")
        if end < 0:
            return 0
        self._offset += end + 1
        count = sum(self._line(raw) for raw in chunk[: end + 1].splitlines())
        if self._writer is not None:
            self._writer.flush()
        self.written += count
        return count

    def _line(self, raw: bytes) -> int:
        try:
            record = json.loads(raw)
        except ValueError:
            return 0  # a line cut short by a killed process: `read_metrics` skips it too
        if not isinstance(record, dict):
            return 0
        step = record.get("step")
        when = _wall_time(record.get("timestamp"))
        count = 0
        for tag, value in record.items():
            if tag in ("step", "timestamp"):
                continue
            number = _number(value)
            if number is None:
                continue
            at = step if isinstance(step, int) and not isinstance(step, bool) else None
            at = self._steps.get(tag, 0) if at is None else at
            self._steps[tag] = at + 1
            if self._writer is None:
                self._writer = _Writer(self.folder)
            self._writer.scalar(tag, number, at, when)
            count += 1
        return count

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _number(value: object) -> float | None:
    if isinstance(value, str):
        return {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}.get(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _has_metrics(outputs_paths: Sequence[Path]) -> bool:
    return any(
        (path / METRICS_FILE).is_file() and (path / METRICS_FILE).stat().st_size > 0
        for path in outputs_paths
    )


class _Mirror:
    """The mirrors of a run's ``metrics.jsonl`` files, synced by one thread while it runs."""

    def __init__(self, outputs_paths: Sequence[Path], say: Callable[[str], None]) -> None:
        self.mirrors = [MetricEvents(path, skip_existing=True) for path in outputs_paths]
        for mirror in self.mirrors:  # this attempt's executor drops the earlier metrics.jsonl
            with contextlib.suppress(OSError):
                mirror.reset()
        self.say = say
        self.failed = False
        self.closed = False
        self.lock = threading.Lock()
        """Held by each sync and by `close`: the ticker's last tick and the end never write at
        once."""

    def sync(self) -> None:
        with self.lock:
            self._sync()

    def _sync(self) -> None:
        if self.failed or self.closed:
            return
        try:
            for mirror in self.mirrors:
                mirror.sync()
        except Exception as exc:  # a view of the metrics: never fails the run
            self.failed = True
            self.say(f"TensorBoard event files are not written any more: {exc}")

    def close(self) -> None:
        """The last lines written and the files closed, without waiting for the ticker (its
        next tick skips a closed mirror): a join put one more thread hand-off on every op's
        path, a wait for a free core on a busy machine."""
        _TICKER.discard(self)
        with self.lock:
            self._sync()
            self.closed = True
            for mirror in self.mirrors:
                with contextlib.suppress(OSError):
                    mirror.close()


class _Ticker:
    """The one thread that syncs every open mirror each second. Opening a run's mirror hands
    no work to a thread: a hand-off per op was a wake-up and a wait for the GIL right before
    the op's process starts. The thread ends after a tick that finds no mirror open (between
    two ops of a chain, now and then), and the next mirror starts it again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mirrors: set[_Mirror] = set()
        self.running = False

    def add(self, mirror: _Mirror) -> None:
        with self.lock:
            self.mirrors.add(mirror)
            if self.running:
                return
            self.running = True
        run_in_thread(self._loop)  # a kept thread: none starts per op

    def discard(self, mirror: _Mirror) -> None:
        with self.lock:
            self.mirrors.discard(mirror)

    def _loop(self) -> None:
        while True:
            time.sleep(_POLL_SECONDS)
            with self.lock:
                mirrors = list(self.mirrors)
                if not mirrors:
                    self.running = False
                    return
            for mirror in mirrors:
                mirror.sync()


_TICKER = _Ticker()


@contextlib.contextmanager
def metric_events(
    outputs_paths: Sequence[str | os.PathLike[str]], say: Callable[[str], None]
) -> Iterator[None]:
    """Mirror the ``metrics.jsonl`` of each of ``outputs_paths`` into event files while the
    block runs (a thread polls them each second; the rest is written when it ends). ``say``
    gets the one line of a mirror that cannot write (TensorBoard not installed, a disk
    error)."""
    paths = [Path(path) for path in outputs_paths]
    if not _enabled():
        yield
        return
    if not tensorboard_installed():
        try:
            yield
        finally:
            if _has_metrics(paths):
                say(
                    "TensorBoard event files were not written (tensorboard is not installed: "
                    "pip install 'polyaxon-prefect[tensorboard]')"
                )
        return
    mirror = _Mirror(paths, say)
    _TICKER.add(mirror)
    try:
        yield
    finally:
        mirror.close()
