"""A run's log file (``job.log``): every line of its processes, or a loud note of where it ends.

The file is the promise behind "the full output is in job.log", so a write that fails (a full
disk, a read-only folder, a file size limit) must not be swallowed: the first failure stops the
writing, and `cut` says at which line the file ends and why, once, for the terminal and the
run's message. Lines are written in batches of raw bytes (``os.write``), so the line count of
what reached the file is exact even when the disk fills in the middle of a batch.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from polyaxon_prefect.exceptions import write_failure

__all__ = ["JobLog"]

_BATCH_BYTES = 64 * 1024
_BATCH_SECONDS = 0.2  # a quiet job's lines still reach the file within this


class JobLog:
    """Appends lines to ``path`` from several threads; never raises on a write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self.cut: str | None = None
        """Where and why the file stops short of the output, once a write failed."""
        self._told = False
        self._lock = threading.Lock()
        self._batch: list[bytes] = []
        self._size = 0
        self._flushed_at = time.monotonic()
        self._lines = 0  # lines whole in the file
        self._fd: int | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as error:
            self.cut = f"{self.name} was not written: {write_failure(path, error)}"

    def write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8", errors="replace")
        with self._lock:
            if self._fd is None:
                return
            self._batch.append(data)
            self._size += len(data)
            now = time.monotonic()
            if self._size >= _BATCH_BYTES or now - self._flushed_at >= _BATCH_SECONDS:
                self._flush(now)

    def _flush(self, now: float) -> None:
        self._flushed_at = now
        view = memoryview(b"".join(self._batch))
        self._batch, self._size = [], 0
        while view and self._fd is not None:
            try:
                done = os.write(self._fd, view)
            except OSError as error:
                self._fail(error)
                return
            self._lines += view[:done].tobytes().count(b"\n")
            view = view[done:]

    def _fail(self, error: OSError) -> None:
        self.cut = (
            f"{self.name} was cut at line {self._lines + 1}: {write_failure(self.path, error)}; "
            "the lines after it are not in the file"
        )
        self._close_fd()

    def _close_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError as error:
                why = write_failure(self.path, error)
                self.cut = self.cut or f"{self.name} may be incomplete: {why}"
            self._fd = None

    def take_notice(self) -> str | None:
        """The cut, the first time it is asked for after it happened (to say it once)."""
        with self._lock:
            if self.cut is None or self._told:
                return None
            self._told = True
            return self.cut

    def holds(self) -> str:
        """What a note may say of the file: all the output, or where it stops."""
        return self.cut or f"the full output is in {self.path}"

    def flush(self) -> None:
        """Write what is batched now (a failure then shows in `cut`)."""
        with self._lock:
            if self._fd is not None and self._batch:
                self._flush(time.monotonic())

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._close_fd()
