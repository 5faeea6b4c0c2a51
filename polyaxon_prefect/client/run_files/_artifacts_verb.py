"""``artifacts RUN [--download DIR] [--json]`` once the run is found, the one code path of both
ways in: what the run wrote under its run directory (a DAG's: each op's under ``ops/<op>/``),
listed or copied into DIR. The op names and uuids come from the run's report, a Prefect artifact
any local process can write through the API: a name that is not a name (``../../x``) is refused
before anything is written; only regular files are copied (a link, a FIFO is skipped, one line
each), never outside DIR.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from polyaxon_prefect.client.run_files._copy_files import copy_files, tree_files
from polyaxon_prefect.client.run_files._name_rule import NAME_CHARACTERS, NAME_REGEX
from polyaxon_prefect.client.run_files._run_paths import find_run_path
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["show_artifacts"]


def _report_name(run_ref: str, what: str, value: Any) -> str:
    """An op name or uuid read from a run's report, checked as the loader checks names: a
    report is a Prefect artifact any local process can write, and its names become paths."""
    if isinstance(value, str) and NAME_REGEX.match(value):
        return value
    raise PolyaxonPrefectError(
        f"the report of run `{run_ref}` names an {what} {value!r} that is not a name "
        f"({NAME_CHARACTERS}): not read as a path, nothing copied"
    )


def _run_files(run: dict[str, Any], run_ref: str) -> tuple[list[tuple[str, Path]], list[str]]:
    """The run's files and, for a DAG, each op's under ``ops/<op>/`` (nested DAGs alike), with
    a note per entry left out (a link, a FIFO...)."""
    found: list[tuple[str, Path]] = []
    notes: list[str] = []
    seen: set[Path] = set()

    def add(node: dict[str, Any], path: Path | None, prefix: str) -> None:
        if path is not None and path.is_dir() and path.resolve() not in seen:
            seen.add(path.resolve())
            files, skipped = tree_files(path)
            found.extend((prefix + f.as_posix(), path / f) for f in files)
            notes.extend(f"{prefix}{note}" if prefix else note for note in skipped)
        ops = node.get("ops")
        for name, op in ops.items() if isinstance(ops, dict) else ():
            _report_name(run_ref, "op", name)
            uuid = op.get("uuid") if isinstance(op, dict) else None
            if uuid:
                uuid = _report_name(run_ref, "op uuid", uuid)
                add(op, find_run_path(uuid), f"{prefix}ops/{name}/")

    root = run.get("artifacts_path")
    add(run, Path(root) if root else None, "")
    return found, notes


def _copy(files: list[tuple[str, Path]], target: Path) -> None:
    """Copy the run's files into ``target`` at their shown paths, never outside it; a target
    that cannot take them is one `PolyaxonPrefectError` line (what, where, why)."""
    pairs = ((path, Path(shown)) for shown, path in files)
    copy_files(pairs, target, hint="--download takes a directory that can be written")


def show_artifacts(run: dict[str, Any], run_ref: str, download: str | None, as_json: bool) -> int:
    """List the files of ``run`` (as `get` shows it), or copy them into ``download``; print
    what was found (the lines, or under ``as_json`` one object)."""
    if not run.get("artifacts_path") and not run.get("ops"):
        raise PolyaxonPrefectError(
            f"run `{run_ref}` has no run directory under this machine's artifacts root "
            "(it ran elsewhere, or its directory was removed)"
        )
    files, skipped = _run_files(run, run_ref)
    for note in skipped:
        print(note, file=sys.stderr)
    listed: list[dict[str, Any]] = [
        {"path": shown, "size": path.stat().st_size} for shown, path in files
    ]
    target = Path(download).expanduser() if download else None
    if target is not None:
        _copy(files, target)
    if as_json:
        shown_run = {"id": run["id"], "name": run["name"], "artifacts_path": run["artifacts_path"]}
        downloaded = {"download": str(target)} if target is not None else {}
        shown_run["skipped"] = skipped
        print(json.dumps({**shown_run, "files": listed, **downloaded}, indent=2))
        return 0
    if not listed:
        print(f"run `{run['name']}` wrote no files (run directory: {run['artifacts_path']})")
        return 0
    width = max(len(str(item["size"])) for item in listed)
    for item in listed:
        print(f"{str(item['size']).rjust(width)}  {item['path']}")
    total = sum(item["size"] for item in listed)
    files_word = f"{len(listed)} file{'s' if len(listed) != 1 else ''}"
    if target is not None:
        print(f"copied {files_word} ({total} bytes) to {target}")
    else:
        print(f"{files_word}, {total} bytes, in {run['artifacts_path']}")
    return 0
