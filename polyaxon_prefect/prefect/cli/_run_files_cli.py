"""``invalidate RUN`` and ``artifacts RUN [--download DIR]``: a run's cache entries and files.

Polyaxon's ``ops invalidate`` and ``ops artifacts``. RUN is what `find_run` resolves (flow-run
id, name or Polyaxon uuid); what it returns names the run's uuid, its DAG ops' and sweep
trials' uuids, and its run directory.

``invalidate`` drops every cache record (`runtime.RunCache`, under ``<artifacts root>/.cache``)
that points to the run or, for a DAG or a sweep, to one of its ops or trials: the next
identical run executes again instead of reusing their outputs. A cache hit's run points to the
run it reused, so invalidating either drops the same entry. The run itself, its files and its
history on the server are left as they are.

``artifacts`` lists what the run wrote under its run directory (a DAG's: each op's under
``ops/<op>/``), and with ``--download DIR`` copies the same tree into DIR. The op names and
uuids come from the run's report, a Prefect artifact any local process can write through the
API: a name that is not a name (``../../x``) is refused before anything is written; only
regular files are copied (a link, a FIFO is skipped, one line each), never outside DIR.

Light at import: the parsers import no Prefect; the commands do, through `find_run`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polyaxon_prefect._cli_args import text_value
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect.runs._copy_files import copy_files, tree_files

__all__ = ["add_run_files_parsers", "cmd_artifacts", "cmd_invalidate"]

_RUN_HELP = "the flow run's id or name, or the Polyaxon run uuid that `run` printed"


def add_run_files_parsers(subparsers: Any) -> None:
    invalidate = subparsers.add_parser(
        "invalidate",
        help="drop a run's cache entries (a DAG's ops' too): the next identical run executes",
    )
    invalidate.add_argument("run", type=text_value, help=_RUN_HELP)
    invalidate.add_argument("--json", action="store_true")
    artifacts = subparsers.add_parser(
        "artifacts", help="list the files a run wrote (path, size), or copy them with --download"
    )
    artifacts.add_argument("run", type=text_value, help=_RUN_HELP)
    artifacts.add_argument(
        "--download",
        metavar="DIR",
        type=text_value,
        default=None,
        help="copy them into DIR (created if need be; files already there are replaced)",
    )
    artifacts.add_argument("--json", action="store_true")


def _uuids(node: Any) -> Iterator[str]:
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
                yield from _uuids(value)


def cmd_invalidate(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect.cli._runs_cli import find_run
    from polyaxon_prefect.runtime import RunCache, resolve_artifacts_root

    _, run = find_run(args.run)
    uuids = sorted(set(_uuids(run)))
    if not uuids:
        raise PolyaxonPrefectError(
            f"run `{args.run}` has no Polyaxon run uuid in its report (not a run of "
            "polyaxon-prefect, or it has not reported yet): no cache entry can name it"
        )
    cache = RunCache.under(resolve_artifacts_root())
    dropped = cache.drop_runs(uuids)
    if args.json:
        shown = {"id": run["id"], "name": run["name"], "uuids": uuids, "dropped": dropped}
        print(json.dumps({**shown, "cache": str(cache.root)}, indent=2))
        return 0
    what = f"run `{run['name']}` ({run['uuid'] or run['id']})"
    if not dropped:
        print(f"{what} has no cache entry in {cache.root}: nothing to drop")
        return 0
    count = f"{len(dropped)} cache entr{'y' if len(dropped) == 1 else 'ies'}"
    print(f"dropped {count} of {what}: the next identical run executes")
    return 0


def _report_name(run_ref: str, what: str, value: Any) -> str:
    """An op name or uuid read from a run's report, checked as the loader checks names: a
    report is a Prefect artifact any local process can write, and its names become paths."""
    from polyaxon_prefect.specs import NAME_CHARACTERS, NAME_REGEX

    if isinstance(value, str) and NAME_REGEX.match(value):
        return value
    raise PolyaxonPrefectError(
        f"the report of run `{run_ref}` names an {what} {value!r} that is not a name "
        f"({NAME_CHARACTERS}): not read as a path, nothing copied"
    )


def _run_files(run: dict[str, Any], run_ref: str) -> tuple[list[tuple[str, Path]], list[str]]:
    """The run's files and, for a DAG, each op's under ``ops/<op>/`` (nested DAGs alike), with
    a note per entry left out (a link, a FIFO...)."""
    from polyaxon_prefect.runtime import find_run_path

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


def cmd_artifacts(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect.cli._runs_cli import find_run

    _, run = find_run(args.run)
    if not run.get("artifacts_path") and not run.get("ops"):
        raise PolyaxonPrefectError(
            f"run `{args.run}` has no run directory under this machine's artifacts root "
            "(it ran elsewhere, or its directory was removed)"
        )
    files, skipped = _run_files(run, args.run)
    for note in skipped:
        print(note, file=sys.stderr)
    listed: list[dict[str, Any]] = [
        {"path": shown, "size": path.stat().st_size} for shown, path in files
    ]
    target = Path(args.download).expanduser() if args.download else None
    if target is not None:
        _copy(files, target)
    if args.json:
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
