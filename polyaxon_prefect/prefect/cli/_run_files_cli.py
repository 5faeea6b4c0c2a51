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
from collections.abc import Iterator

from polyaxon_prefect._cli_args import Subparsers, text_value
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["add_run_files_parsers", "cmd_artifacts", "cmd_invalidate"]

_RUN_HELP = "the flow run's id or name, or the Polyaxon run uuid that `run` printed"


def add_run_files_parsers(subparsers: Subparsers) -> None:
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


def _uuids(node: object) -> Iterator[str]:
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


def cmd_artifacts(args: argparse.Namespace) -> int:
    from polyaxon_prefect.client._artifacts_verb import show_artifacts
    from polyaxon_prefect.prefect.cli._runs_cli import find_run

    _, run = find_run(args.run)  # the thin client's `artifacts` is the same, over its HTTP
    return show_artifacts(run, args.run, args.download, args.json)
