"""``metrics RUN`` and ``tensorboard [RUN ...]``: a run's metric history, as text, JSON or a
chart, and TensorBoard on the event files every run writes.

RUN is what `find_run` resolves (flow-run id, name -> its latest run, Polyaxon uuid). A job's
history is read from its ``metrics.jsonl``; a DAG's or a sweep's covers each op and trial that
ran (a nested DAG's ops as ``outer/inner``, a trial as ``trial-<index>``, as ``logs --op``
names them), each read from its own run directory on this machine.

``metrics --json`` prints, for one run (a job, or one op or trial picked with ``--op`` /
``--trial``)::

    {"<metric>": [{"step": 0, "value": 0.5, "timestamp": "<ISO 8601 UTC>"}, ...], ...}

and for a DAG or a sweep, each op or trial under its path::

    {"ops": {"train": {"<metric>": [...]}, "tune/trial-0": {...}, ...}}

Values JSON has no number for are the strings ``"nan"``, ``"inf"``, ``"-inf"``.

Light at import: the parsers import no Prefect; the commands do, through `find_run`.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from polyaxon_prefect._cli_args import Subparsers, add_run_arg, port, text_value, whole_number
from polyaxon_prefect.exceptions import PolyaxonPrefectError

__all__ = ["add_metrics_parsers", "cmd_metrics", "cmd_tensorboard", "run_leaves"]


def add_metrics_parsers(subparsers: Subparsers) -> None:
    metrics = subparsers.add_parser(
        "metrics",
        help="a run's metric history (step, value, time); a DAG's ops', a sweep's trials'",
    )
    add_run_arg(metrics)
    metrics.add_argument(
        "--name",
        dest="names",
        action="append",
        type=text_value,
        default=None,
        metavar="METRIC",
        help="only this metric (repeat for several)",
    )
    metrics.add_argument(
        "--op",
        type=text_value,
        default=None,
        metavar="NAME",
        help="only this DAG op (and what it runs); `nested/a` for an op of a nested DAG, "
        "`trial-3` for a sweep's trial",
    )
    metrics.add_argument(
        "--trial",
        type=whole_number(0),
        default=None,
        metavar="INDEX",
        help="only this trial of the sweep (of the `--op` sweep, in a DAG)",
    )
    shown = metrics.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="{metric: [{step, value, timestamp}]}")
    shown.add_argument("--plot", action="store_true", help="a line chart of each metric")
    board = subparsers.add_parser(
        "tensorboard",
        help="TensorBoard on runs' metrics (their event files), side by side (optional extra)",
    )
    board.add_argument(
        "runs",
        nargs="*",
        type=text_value,
        metavar="RUN",
        help="runs to show (a DAG's ops, a sweep's trials); none: every run of the project",
    )
    board.add_argument("--host", default="127.0.0.1", type=text_value)
    board.add_argument("--port", type=port, default=None, help="default: a free port")


# ----------------------------------------------------------------------------- the runs


def run_leaves(run: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str | None]]:
    """``(path, uuid)`` of every run below ``run`` (as `get` shows it) that runs a process: a
    DAG's ops (a nested DAG's and a sweep op's, under their paths), a sweep's trials."""
    leaves: list[tuple[str, str | None]] = []
    ops = run.get("ops")
    for name, op in ops.items() if isinstance(ops, Mapping) else ():
        if not isinstance(op, Mapping):
            continue
        if op.get("ops") or op.get("trials"):
            leaves += run_leaves(op, f"{prefix}{name}/")
        else:
            leaves.append((f"{prefix}{name}", op.get("uuid")))
    trials = run.get("trials")
    for trial in trials if isinstance(trials, list) else ():
        if isinstance(trial, Mapping) and "index" in trial:
            leaves.append((f"{prefix}trial-{trial['index']}", trial.get("uuid")))
    return leaves


def _is_composite(run: Mapping[str, Any]) -> bool:
    return bool(run.get("ops")) or "trials" in run


def _wanted(args: argparse.Namespace) -> str | None:
    """The op path ``--op`` and ``--trial`` select (None: all)."""
    if args.trial is None:
        return args.op
    trial = f"trial-{args.trial}"
    return f"{args.op}/{trial}" if args.op else trial


def _run_dir(uuid: str | None) -> Path | None:
    from polyaxon_prefect.runtime import find_run_path

    return find_run_path(uuid) if uuid else None


def _selected(
    run: Mapping[str, Any], ref: str, wanted: str | None
) -> list[tuple[str, Path | None]]:
    """The op paths of ``run`` that ``wanted`` selects, with their run directories."""
    from polyaxon_prefect.client.logs._logs_verb import check_op, op_paths

    check_op(wanted, ref, op_paths(run))
    return [
        (path, _run_dir(uuid))
        for path, uuid in run_leaves(run)
        if wanted is None or path == wanted or path.startswith(wanted + "/")
    ]


# ----------------------------------------------------------------------------- metrics


def _local_run(ref: str) -> dict[str, Any]:
    """The run ``ref`` names as the server knows it, else, for the uuid of a run folder on this
    machine (a job still going has not reported its uuid yet), that folder alone."""
    from polyaxon_prefect.prefect.cli._runs_cli import find_run
    from polyaxon_prefect.runtime import find_run_path

    try:
        return find_run(ref)[1]
    except PolyaxonPrefectError:
        path = find_run_path(ref)
        if path is None:
            raise
        return {"id": ref, "name": ref, "uuid": ref, "artifacts_path": str(path)}


def _no_directory(ref: str, run: Mapping[str, Any] | None = None) -> PolyaxonPrefectError:
    if run is not None and not run.get("uuid"):
        return PolyaxonPrefectError(
            f"run `{ref}` has not reported its run uuid yet (a job reports it when it ends): "
            "name it by its uuid, the name of its folder under the artifacts root"
        )
    return PolyaxonPrefectError(
        f"run `{ref}` has no run directory under this machine's artifacts root (it ran "
        "elsewhere, or its directory was removed): its metrics are not here"
    )


def _histories(args: argparse.Namespace, run: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Whether the run is one run (a job, or the one op or trial asked for) and its history,
    else each op's and trial's history by path (every metric: `_only` picks ``--name``)."""
    from polyaxon_prefect.runtime import run_metric_history

    wanted = _wanted(args)
    if not _is_composite(run):
        if wanted is not None:
            raise PolyaxonPrefectError(f"run `{args.run}` is a single run: it has no ops or trials")
        if not run.get("artifacts_path"):
            raise _no_directory(args.run, run)
        return True, run_metric_history(run["artifacts_path"])
    selected = _selected(run, args.run, wanted)
    if wanted is not None and [path for path, _ in selected] == [wanted]:
        path, folder = selected[0]
        if folder is None:
            raise _no_directory(f"{args.run}/{path}")
        return True, run_metric_history(folder)
    found: dict[str, Any] = {}
    for path, folder in selected:
        if folder is None:
            print(
                f"{path}: no run directory on this machine (not run, or run elsewhere)",
                file=sys.stderr,
            )
            continue
        found[path] = run_metric_history(folder)
    return False, found


def _only(args: argparse.Namespace, histories: list[dict[str, Any]]) -> None:
    """Keep the ``--name`` metrics of each history; a name none of them has is an error that
    names the metrics there are."""
    if not args.names:
        return
    seen = list(dict.fromkeys(name for history in histories for name in history))
    missing = [name for name in args.names if name not in seen]
    if missing:
        there = f"its metrics: {', '.join(seen)}" if seen else "it logged none"
        raise PolyaxonPrefectError(
            f"run `{args.run}` has no metric {', '.join(f'`{n}`' for n in missing)}; {there}"
        )
    for history in histories:
        for name in [name for name in history if name not in args.names]:
            del history[name]


def _time(timestamp: object) -> str:
    try:
        return datetime.fromisoformat(str(timestamp)).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return "-" if timestamp is None else str(timestamp)


def _print_history(history: Mapping[str, Any], plot: bool, indent: str = "") -> None:
    from polyaxon_prefect.prefect.watch._metric_charts import text_chart

    for name, points in history.items():
        if plot:
            for line in text_chart(name, points):
                print(indent + line)
            continue
        print(f"{indent}{name}:")
        rows = [("step", "value", "time")]
        rows += [
            ("-" if p["step"] is None else str(p["step"]), str(p["value"]), _time(p["timestamp"]))
            for p in points
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            print(
                indent
                + "  "
                + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            )


def cmd_metrics(args: argparse.Namespace) -> int:
    from polyaxon_prefect.runtime import jsonable_history

    run = _local_run(args.run)
    single, found = _histories(args, run)
    _only(args, [found] if single else list(found.values()))
    if args.json:
        shown = (
            jsonable_history(found)
            if single
            else {"ops": {path: jsonable_history(history) for path, history in found.items()}}
        )
        print(json.dumps(shown, indent=2))
        return 0
    if single:
        if not found:
            print(f"run `{run['name']}` logged no metrics")
        _print_history(found, args.plot)
        return 0
    if not found:
        print(f"run `{run['name']}` has no op or trial with a run directory here")
    for path, history in found.items():
        print(f"{path}:" + ("" if history else " no metrics"))
        _print_history(history, args.plot, indent="  ")
    return 0


# ----------------------------------------------------------------------------- tensorboard


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def board_runs(refs: list[str]) -> dict[str, Path]:
    """TensorBoard's run name -> folder of each run ``refs`` name: a job's outputs folder (its
    event files and any it wrote itself), a DAG's ops' and a sweep's trials' as
    ``<run>/<path>``. Two runs of one name are told apart by their uuid."""
    shown: dict[str, Path] = {}
    for ref in refs:
        run = _local_run(ref)
        name = str(run["name"])
        if name in shown or any(key.startswith(name + "/") for key in shown):
            name = f"{name}-{(run.get('uuid') or run['id'])[:8]}"
        if not _is_composite(run):
            if not run.get("artifacts_path"):
                raise _no_directory(ref, run)
            shown[name] = Path(run["artifacts_path"]) / "outputs"
            continue
        for path, folder in _selected(run, ref, None):
            if folder is not None:
                shown[f"{name}/{path}"] = folder / "outputs"
    return shown


def _on_the_server(refs: list[str]) -> dict[str, Path]:
    """`board_runs` on the server every command shares, let go before TensorBoard starts (it
    may serve for hours: it must not keep a server up)."""
    from polyaxon_prefect.prefect.server._connect import connect

    notify = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    connection = connect(notify, purpose="`tensorboard`")
    try:
        return board_runs(refs)
    finally:
        connection.close()


def cmd_tensorboard(args: argparse.Namespace) -> int:
    from polyaxon_prefect.runtime import project_name, resolve_artifacts_root, tensorboard_installed

    if not tensorboard_installed():
        raise PolyaxonPrefectError(
            "tensorboard is not installed: pip install 'polyaxon-prefect[tensorboard]'"
        )
    if args.runs:
        runs = _on_the_server(args.runs)
        if not runs:
            raise PolyaxonPrefectError("none of these runs has a run directory on this machine")
        where = ["--logdir_spec", ",".join(f"{name}:{path}" for name, path in runs.items())]
        what = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    else:
        folder = resolve_artifacts_root() / project_name()
        if not folder.is_dir():
            raise PolyaxonPrefectError(f"no runs in {folder} yet: run an op first")
        where, what = ["--logdir", str(folder)], f"every run in {folder}"
    chosen = args.port or _free_port(args.host)
    print(f"TensorBoard on {what}: http://{args.host}:{chosen}/ (Ctrl-C to stop)")
    for name, path in runs.items() if args.runs else ():
        print(f"  {name}: {path}")
    sys.stdout.flush()
    argv = [sys.executable, "-m", "tensorboard.main", *where]
    return _serve([*argv, "--host", args.host, "--port", str(chosen)])


def _serve(argv: list[str]) -> int:
    """TensorBoard until it ends: Ctrl-C reaches it too (same process group), a SIGTERM sent
    to this command is passed on to it, so it never outlives the command."""
    process = subprocess.Popen(argv)
    previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
