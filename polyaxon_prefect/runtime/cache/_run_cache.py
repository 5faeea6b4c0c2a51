"""The op cache: succeeded runs by cache key, so an identical op reuses their outputs.

Polyaxon looks a cache hit up among *succeeded* runs with the same cache state. Prefect's task
cache cannot be trusted with that: a task body that *returns* a failed state (which is how a
failed job ends without a traceback) is committed to the cache like a success, so the next run
of the same op would come back ``Cached``/COMPLETED with no outputs. The cache is therefore kept
here, apart from Prefect, and only `store` writes it, which callers call for a succeeded run
alone: a failed, stopped, timed-out, skipped or upstream-failed run never becomes a hit.

One JSON record per key under ``<artifacts root>/.cache/``, replaced atomically, so concurrent
runs and readers in other processes never see half a record. A record is a hit while its
``ttl`` (seconds from the end of the run) has not expired and the run directory it points to
still exists (its outputs may be files there).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyaxon_prefect.client import CACHE_DIR_NAME, drop_cached_runs
from polyaxon_prefect.client import CACHE_KEY as _KEY
from polyaxon_prefect.specs import Status

__all__ = ["CACHE_DIR_NAME", "CacheHit", "RunCache"]

_RECORD_VERSION = 1


@dataclass(frozen=True)
class CacheHit:
    """The succeeded run a cache key points to."""

    uuid: str
    outputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts_path: str | None = None
    finished_at: float = 0.0


class RunCache:
    """Cache records under ``root`` (``<artifacts root>/.cache``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def under(cls, artifacts_root: Path) -> RunCache:
        return cls(Path(artifacts_root) / CACHE_DIR_NAME)

    def _path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / f"{key}.json"

    def lookup(
        self, key: str, ttl: float | None = None, *, now: float | None = None
    ) -> CacheHit | None:
        """The succeeded run stored for ``key``, or None (no record, expired, unreadable, or
        its run directory is gone). ``ttl`` is the cache's ``ttl`` in seconds (None: forever)."""
        try:
            record = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("status") != Status.SUCCEEDED:
            return None
        finished_at = float(record.get("finished_at") or 0.0)
        now = time.time() if now is None else now
        if ttl is not None and ttl > 0 and now > finished_at + ttl:
            return None
        artifacts_path = record.get("artifacts_path")
        if artifacts_path and not Path(artifacts_path).is_dir():
            return None
        return CacheHit(
            uuid=str(record.get("uuid") or ""),
            outputs=dict(record.get("outputs") or {}),
            metrics=dict(record.get("metrics") or {}),
            artifacts_path=artifacts_path,
            finished_at=finished_at,
        )

    def drop_runs(self, uuids: Iterable[str]) -> list[str]:
        """Remove every record that points to one of the runs ``uuids`` (hex, dashes or not),
        so the next identical op runs again (``invalidate``); the keys removed. Records of
        other runs, and files that are not readable records, are left alone."""
        return drop_cached_runs(self.root, uuids)  # `invalidate`'s, both ways in (`client`)

    def store(
        self,
        key: str,
        *,
        uuid: str,
        outputs: dict[str, Any],
        metrics: dict[str, Any],
        artifacts_path: str | None,
    ) -> None:
        """Record a *succeeded* run for ``key`` (call it for nothing else)."""
        record = {
            "version": _RECORD_VERSION,
            "status": Status.SUCCEEDED,
            "uuid": uuid,
            "outputs": outputs,
            "metrics": metrics,
            "artifacts_path": artifacts_path,
            "finished_at": time.time(),
        }
        path = self._path(key)
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, default=str)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
