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
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from polyaxon_prefect._cli_args import text_value, whole_number
from polyaxon_prefect.specs import MATRIX_KINDS

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
_POLL_SECONDS = 0.5


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


def load_run_file(args: argparse.Namespace) -> Any:
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


def overrides_from(args: argparse.Namespace) -> Any:
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


class _JobLines(logging.Handler):
    """Writes the job's own lines (records marked `JOB_LINE`) as they were printed, and keeps
    Prefect's console from echoing them a second time (they still reach the API: the UI and
    ``logs`` keep them)."""

    def __init__(self, stream: IO[str], prefixed: bool) -> None:
        super().__init__(logging.DEBUG)
        from polyaxon_prefect.prefect._job import JOB_LINE

        self.mark = JOB_LINE
        self.stream = stream
        self.prefixed = prefixed
        self.quieted: list[logging.Handler] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Also the filter set on the console handlers: True for anything but a job line."""
        return getattr(record, self.mark, None) is None

    def emit(self, record: logging.LogRecord) -> None:
        if self.filter(record):
            return
        self._quiet_console(record.name)
        who = getattr(record, "task_run_name", None) or getattr(record, "flow_run_name", None)
        line = record.getMessage()
        try:
            self.stream.write(f"[{who}] {line}\n" if self.prefixed and who else line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def handle(self, record: logging.LogRecord) -> bool:
        self.emit(record)  # `filter` is what console handlers use; this handler sees all
        return True

    def _quiet_console(self, name: str) -> None:
        """Prefect sets up its console handler (on the root logger) when a run starts, so it
        is looked for at the first job line, above the logger that line came from."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            for handler in logger.handlers:
                if (
                    isinstance(handler, logging.StreamHandler)
                    and handler is not self
                    and handler not in self.quieted
                ):
                    handler.addFilter(self)
                    self.quieted.append(handler)
            logger = logger.parent if logger.propagate else None

    def restore(self) -> None:
        for handler in self.quieted:
            handler.removeFilter(self)
        self.quieted.clear()


class _StatusWatch:
    """Polls the flow runs of this process (`Session.flow_runs`) and says each change."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.seen: dict[str, str] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="run-watch", daemon=True)

    def _loop(self) -> None:
        while not self.done.wait(_POLL_SECONDS):
            self.poll()
        self.poll()

    def poll(self) -> None:
        from polyaxon_prefect.runtime._session import current_session

        ids = list(dict.fromkeys([*current_session().flow_runs, *self.seen]))
        if not ids:
            return
        try:
            runs = self._read(ids)
        except Exception:  # the server is slow or gone: the run's own watch says so
            return
        from polyaxon_prefect.prefect._states import polyaxon_status

        for run in runs:
            if run.state is None:
                continue
            status = polyaxon_status(run.state)
            if self.seen.get(str(run.id)) == status:
                continue
            self.seen[str(run.id)] = status
            stamp = time.strftime("%H:%M:%S")
            try:
                self.stream.write(f"{stamp} {run.name}: {status}\n")
                self.stream.flush()
            except (OSError, ValueError):
                return

    @staticmethod
    def _read(ids: list[str]) -> list[Any]:
        """The flow runs ``ids`` and their children (a sweep's trials, a DAG's nested runs,
        which this process records through the API rather than runs as flows)."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import (
            FlowRunFilter,
            FlowRunFilterId,
            FlowRunFilterParentFlowRunId,
        )
        from prefect.client.schemas.sorting import FlowRunSort

        with get_client(sync_client=True) as client:
            found = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids))
            ) + client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=ids)
                ),
                sort=FlowRunSort.START_TIME_ASC,
            )
        unique = {str(run.id): run for run in found}
        # in the order the states were entered: a trial's end before its sweep's
        return sorted(
            unique.values(), key=lambda run: run.state.timestamp if run.state else run.created
        )


@contextmanager
def follow(args: argparse.Namespace, *, prefixed: bool) -> Iterator[None]:
    """``-w`` and ``-l`` around the run (nothing without them). ``prefixed``: the run has
    several ops or trials, so each job line says whose it is."""
    watch = _StatusWatch(sys.stderr) if args.watch else None
    handler = None
    loggers = [logging.getLogger(name) for name in ("prefect.flow_runs", "prefect.task_runs")]
    if args.log:
        handler = _JobLines(sys.stderr if args.json else sys.stdout, prefixed)
        for logger in loggers:
            logger.addHandler(handler)
    if watch is not None:
        watch.thread.start()
    try:
        yield
    finally:
        if watch is not None:
            watch.done.set()
            watch.thread.join(5)
        if handler is not None:
            for logger in loggers:
                logger.removeHandler(handler)
            handler.restore()
