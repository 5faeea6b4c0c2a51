"""Polyaxon's own ``run`` flags: ``--url``, ``--eager``, ``-HP`` and ``--matrix-*``,
``--name``/``--description``/``--tags``, ``-w/--watch`` and ``-l/--log``.

The parser part imports no Prefect; `follow` (``-w``, ``-l``) imports it when a run starts.

- ``-u/--url URL``: the Polyaxonfile fetched with `urlRef`'s limits (`loading.source_of`);
  every ``-f`` is then a preset. In Polyaxon 2.x's CLI ``-u`` alone is ``--upload`` (a flag), so
  ``-u`` with no URL after it (and ``--upload``) is accepted as that, with one note: scripts
  written for either CLI keep working.
- ``--eager``: Polyaxon 1.x ran a grid, random or mapping sweep in the CLI's own process with
  it; here every sweep already runs without a server of ours, so it changes nothing (one line).
- ``-w``: one line on stderr per status change of each flow run this command starts (the
  run, a sweep's trials, a DAG's nested runs), statuses by `_states`, plus the op table of a
  DAG (``--live``). ``-l``: the job's own output lines, as printed, on stdout (on stderr under
  ``--json``), prefixed with the op's run name inside a DAG or a sweep, instead of Prefect's
  console echo of them (the API keeps them all the same). The run goes on in the
  foreground either way and the exit code is its status, as without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from polyaxon_prefect._cli_args import text_value, whole_number
from polyaxon_prefect.specs import MATRIX_KINDS

if TYPE_CHECKING:
    from polyaxon_prefect.loading import CliOverrides, LoadedPolyaxonfile

__all__ = [
    "EAGER_NOTE",
    "add_follow_flags",
    "add_polyaxon_flags",
    "check_command_line",
    "follow",
    "load_run_file",
    "overrides_from",
    "sources_of",
]

EAGER_NOTE = (
    "note: --eager changes nothing here: sweeps (grid, random, mapping and the rest) already "
    "run in this process, with no Polyaxon server"
)
UPLOAD_NOTE = (
    "note: -u/--upload changes nothing here: a local run reads the files where they are "
    "(nothing is uploaded)"
)
_UPLOAD = "\0upload"
"""``-u`` given with no URL: Polyaxon 2.x's ``--upload`` flag."""
_PROG = "polyaxon-prefect run"


def add_polyaxon_flags(parser: argparse.ArgumentParser) -> None:
    """Polyaxon 2.x's ``run`` flags this project runs (its ``polyaxon run --help`` names)."""
    parser.add_argument(
        "-u",
        "--url",
        metavar="URL",
        nargs="?",
        const=_UPLOAD,
        default=None,
        help="the Polyaxonfile at this http(s) URL, fetched with urlRef's size and time "
        "limits (then every -f is a preset); a pathRef in it is relative to the URL. "
        "-u with no URL is Polyaxon 2.x's --upload: accepted, nothing to upload here",
    )
    parser.add_argument(
        "--upload", action="store_true", help="accepted for Polyaxon's CLI: nothing to upload"
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="accepted for Polyaxon's docs: sweeps already run here without a server",
    )
    parser.add_argument("--name", type=text_value, default=None, help="the run's name")
    parser.add_argument(
        "--description", type=text_value, default=None, help="the run's description"
    )
    parser.add_argument(
        "--tags",
        type=text_value,
        default=None,
        metavar="A,B",
        help="tags of the run, comma separated (added to the file's): Prefect's flow run tags",
    )
    add_follow_flags(parser)
    matrix = parser.add_argument_group("ad-hoc matrix (Polyaxon's -HP)")
    matrix.add_argument(
        "-HP",
        "--hparam",
        "--hparams",
        dest="hparams",
        action="append",
        default=[],
        metavar="NAME=KIND:VALUE",
        help="sweep a param of the job, e.g. -HP 'lr=choice:[0.1,0.01]' or "
        "-HP 'epochs=range:1:10:2' (repeatable)",
    )
    matrix.add_argument(
        "--matrix-kind",
        choices=MATRIX_KINDS,
        default=None,
        help="the -HP matrix's kind (default: grid)",
    )
    matrix.add_argument(
        "--matrix-concurrency",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="trials at a time (default: 1)",
    )
    matrix.add_argument(
        "--matrix-num-runs",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="the most trials to run (default: all a grid has; a random sweep needs it)",
    )


def add_follow_flags(parser: argparse.ArgumentParser) -> None:
    """``-w/--watch`` and ``-l/--log``: of ``run``, and of ``restart``/``resume``, which run a
    recorded operation the same way (`follow` reads them)."""
    parser.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="print one line on stderr per status change of the run (and of its trials and "
        "ops) until it ends",
    )
    parser.add_argument(
        "-l",
        "--log",
        "--logs",
        dest="log",
        action="store_true",
        help="print the job's output lines on stdout as they come (stderr under --json)",
    )


def check_command_line(args: argparse.Namespace) -> int | None:
    """None when the command line names a Polyaxonfile and gives the ``--matrix-*`` flags
    with ``-HP``; else argparse's kind of line on stderr (``{"error"}`` on stdout under
    ``--json``) and exit code 2. Says what ``--eager`` does."""
    error = None
    if args.url == _UPLOAD or args.upload:
        args.url = None if args.url == _UPLOAD else args.url
        print(UPLOAD_NOTE, file=sys.stderr)
    if not args.files and not args.url:
        error = "one of the arguments -f/--file -u/--url is required"
    hp_only = [
        flag
        for flag, value in (
            ("--matrix-kind", args.matrix_kind),
            ("--matrix-concurrency", args.matrix_concurrency),
            ("--matrix-num-runs", args.matrix_num_runs),
        )
        if value is not None
    ]
    if error is None and hp_only and not args.hparams:
        error = f"{', '.join(hp_only)} only applies to an -HP matrix: add -HP NAME=KIND:VALUE"
    if error is not None:
        print(f"{_PROG}: error: {error} (see `{_PROG} --help`)", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": error, "usage": _PROG}))
        return 2
    if args.eager:
        print(EAGER_NOTE, file=sys.stderr)
    return None


def load_run_file(args: argparse.Namespace) -> LoadedPolyaxonfile:
    """The `LoadedPolyaxonfile` the command line names, with its ``-P``, ``-HP``, ``--name``,
    ``--description`` and ``--tags``; raises `PolyaxonfileError` with every problem."""
    from polyaxon_prefect.loading import load_polyaxonfile, parse_cli_params

    params = parse_cli_params(args.params or [])
    main_file, presets = sources_of(args)
    return load_polyaxonfile(
        main_file, presets, params, hub_dirs=args.hub_dirs, overrides=overrides_from(args)
    )


def sources_of(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The main Polyaxonfile and the presets: ``--url``'s file and every ``-f``, else the
    first ``-f`` and the others (Polyaxon's rule)."""
    files = list(args.files or [])
    if args.url:
        return args.url, files
    return files[0], files[1:]


def overrides_from(args: argparse.Namespace) -> CliOverrides:
    """The `CliOverrides` of the command line; a bad ``-HP`` raises `PolyaxonfileError`."""
    from polyaxon_prefect.loading import (
        CliOverrides,
        matrix_from_hparams,
        parse_hparams,
        parse_tags,
    )

    matrix = None
    if args.hparams:
        matrix = matrix_from_hparams(
            parse_hparams(args.hparams),
            kind=args.matrix_kind,
            concurrency=args.matrix_concurrency,
            num_runs=args.matrix_num_runs,
        )
    return CliOverrides(
        matrix=matrix,
        name=args.name,
        description=args.description,
        tags=tuple(parse_tags(args.tags)),
    )


# ------------------------------------------------------------------------- -w and -l


@contextmanager
def follow(args: argparse.Namespace, *, prefixed: bool) -> Iterator[None]:
    """``-w`` and ``-l`` around the run (nothing without them); `_follow` does the work, loaded
    with `logging` only when a run starts (``check`` imports this module's parsers)."""
    from polyaxon_prefect.prefect.cli._follow import follow_run

    with follow_run(args, prefixed=prefixed):
        yield
