"""``invalidate RUN``: the op cache's records that point to a run (or to its DAG ops, nested
DAGs' ops and sweep trials) removed, so the next identical op executes again. Standard library
only: the thin client and the flow layer (`prefect.cli._run_files_cli`) run this one code path,
and the op cache (`runtime.RunCache`) reads its files' place and key rule from here.

The cache is one JSON record per key under ``<artifacts root>/.cache/`` naming the succeeded
run it reuses (``uuid``); a cache hit's run points to the run it reused, so invalidating either
drops the same entry. The run itself, its files and its history on the server are left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from polyaxon_prefect.client.run_files._run_paths import resolve_artifacts_root
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["CACHE_DIR_NAME", "CACHE_KEY", "drop_cached_runs", "invalidate_run", "run_uuids"]

CACHE_DIR_NAME = ".cache"
"""The op cache's folder under the artifacts root."""
CACHE_KEY = re.compile(r"^[0-9a-f]{16,128}$")
"""A cache key (a record's file name without ``.json``): a hex digest."""


def drop_cached_runs(root: Path, uuids: Iterable[str]) -> list[str]:
    """Remove every record under ``root`` that points to one of the runs ``uuids`` (hex,
    dashes or not); the keys removed. Records of other runs, and files that are not readable
    records, are left alone."""
    wanted = {uuid.replace("-", "").lower() for uuid in uuids if uuid}
    dropped: list[str] = []
    if not wanted or not root.is_dir():
        return dropped
    for path in sorted(root.glob("*.json")):
        if not CACHE_KEY.match(path.stem):
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        named = str(record.get("uuid") or "") if isinstance(record, dict) else ""
        if named.replace("-", "").lower() in wanted:
            path.unlink(missing_ok=True)
            dropped.append(path.stem)
    return dropped


def run_uuids(node: Any) -> Iterator[str]:
    """Every ``uuid`` in a run as `get` returns it: its own, its ops', nested DAGs', trials'."""
    if isinstance(node, dict):
        uuid = node.get("uuid")
        if isinstance(uuid, str) and uuid:
            yield uuid
        for key in ("ops", "trials", "best"):
            child = node.get(key)
            values = child.values() if isinstance(child, dict) and key == "ops" else [child]
            if key == "trials" and isinstance(child, list):
                values = child
            for value in values:
                yield from run_uuids(value)


def invalidate_run(run: dict[str, Any], ref: str, as_json: bool) -> int:
    """Drop the cache entries of ``run`` (as `get` reads it; ``ref``: what the user named it
    by) and say what was dropped. A run without a Polyaxon uuid is a `PolyaxonPrefectError`."""
    uuids = sorted(set(run_uuids(run)))
    if not uuids:
        raise PolyaxonPrefectError(
            f"run `{ref}` has no Polyaxon run uuid in its report (not a run of "
            "polyaxon-prefect, or it has not reported yet): no cache entry can name it"
        )
    root = resolve_artifacts_root() / CACHE_DIR_NAME
    dropped = drop_cached_runs(root, uuids)
    if as_json:
        shown = {"id": run["id"], "name": run["name"], "uuids": uuids, "dropped": dropped}
        print(json.dumps({**shown, "cache": str(root)}, indent=2))
        return 0
    what = f"run `{run['name']}` ({run['uuid'] or run['id']})"
    if not dropped:
        print(f"{what} has no cache entry in {root}: nothing to drop")
        return 0
    count = f"{len(dropped)} cache entr{'y' if len(dropped) == 1 else 'ies'}"
    print(f"dropped {count} of {what}: the next identical run executes")
    return 0
