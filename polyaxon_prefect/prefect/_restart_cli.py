"""``polyaxon-prefect restart RUN`` and ``resume RUN``: a run again, from what it recorded.

Like ``polyaxon ops restart`` / ``ops resume``. Both start from the run's own record
(`polyaxon_prefect.prefect._record`: the resolved operation and how it was run), never from
the file as it is now, so an edited or deleted file or a dead ``urlRef`` does not matter.

- ``restart``: the same operation as a new run (``original_uuid`` and ``cloning_kind:
  restart`` in its globals and record), with ``-P`` values and ``-f`` presets on top. A DAG
  restarts from an op (``--from``, default: its first failed or stopped op): the succeeded ops
  not downstream of it are reused (their recorded outputs, not run; shown ``reused from run
  <uuid>``), that op and what follows run. ``--copy``: the new run's directory starts as a copy
  of the old one's (``cloning_kind: copy``).
- ``resume``: a sweep's own study goes on (``run --resume`` for that run, whichever is latest):
  trials left running are run again, finished ones never; ``--more N`` lets a finished sweep
  run N more trials (``numRuns``/``maxIterations`` + N), its leaderboard grows.

Light at import: the parsers are built before Prefect is imported; the commands import it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect._cli_args import text_value
from polyaxon_prefect.exceptions import PolyaxonfileError, PolyaxonPrefectError

if TYPE_CHECKING:
    from polyaxon_prefect.dag import DagReuse, OpRecord
    from polyaxon_prefect.prefect._record import RunRecord
    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = ["add_restart_parsers", "cmd_restart", "cmd_resume"]

_USAGE = 2


class _Refused(Exception):
    """A RUN the command cannot take as asked (exit 2: the command line is wrong for it)."""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        type=text_value,
        help="the run: its Polyaxon uuid (what `run` printed), flow-run id or flow-run name",
    )
    parser.add_argument(
        "--connections",
        metavar="FILE",
        default=None,
        help="the connections file (default: $POLYAXON_PREFECT_CONNECTIONS); a run records "
        "connection names only",
    )
    parser.add_argument(
        "--storage",
        metavar="URL",
        default=None,
        help="a sweep's Optuna storage, when its recorded URL had a password (never recorded)",
    )
    parser.add_argument("--live", action="store_true", help="a live table of op statuses")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def add_restart_parsers(subparsers: Any) -> None:
    """Add ``restart`` and ``resume`` to ``subparsers`` (from ``add_subparsers``)."""
    restart = subparsers.add_parser(
        "restart",
        help="run a run's recorded operation again (a DAG from its failed op)",
        description="Run the operation RUN recorded again, as a new run, with -P/-f on top. "
        "A DAG reuses the succeeded ops before --from OP (default: its first failed or "
        "stopped op) and runs OP and everything downstream of it.",
    )
    _common(restart)
    restart.add_argument(
        "--from",
        dest="from_op",
        default=None,
        type=text_value,
        metavar="OP",
        help="a DAG's op to run from (default: the first failed or stopped op)",
    )
    restart.add_argument(
        "--copy",
        action="store_true",
        help="start the new run's directory as a copy of the old run's",
    )
    restart.add_argument(
        "-P",
        "--param",
        dest="params",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a param value on top of the recorded ones (repeatable)",
    )
    restart.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="a preset (override) file applied on top of the recorded operation (repeatable)",
    )
    resume = subparsers.add_parser(
        "resume",
        help="continue a sweep's own study (after a kill, a stop or its end)",
        description="Continue the study of the sweep RUN: trials left running run again, "
        "finished ones never; --more N runs N trials beyond numRuns/maxIterations.",
    )
    _common(resume)
    resume.add_argument(
        "--more",
        type=_positive,
        default=None,
        metavar="N",
        help="run N more trials than the sweep was set to (numRuns/maxIterations + N)",
    )


# ----------------------------------------------------------------------------- shared


def _run_path(ref: str) -> Path:
    """The run directory of RUN: a uuid with a directory under the artifacts root is enough
    (no server needed); else the run is looked up on the server (`find_run`)."""
    from polyaxon_prefect.prefect._runs_cli import find_run
    from polyaxon_prefect.runtime import find_run_path

    local = find_run_path(ref)
    if local is not None:
        return local
    _api, run = find_run(ref)
    path = run.get("artifacts_path")
    if not path:
        raise PolyaxonPrefectError(
            f"run `{ref}` has no run directory under this machine's artifacts root: it cannot "
            "be run again from here"
        )
    return Path(path)


def _load(run_path: Path, record: RunRecord, args: argparse.Namespace) -> LoadedPolyaxonfile:
    """The recorded operation, with the recorded params, then ``-P`` and ``-f`` on top."""
    from polyaxon_prefect.loading import load_polyaxonfile, parse_cli_params
    from polyaxon_prefect.prefect._record import OPERATION_FILE

    given = parse_cli_params(getattr(args, "params", []) or [])
    presets = getattr(args, "files", []) or []
    loaded = load_polyaxonfile(run_path / OPERATION_FILE, presets, {**record.params, **given})
    return dataclasses.replace(loaded, from_legacy=record.from_legacy)


def _storage(record: RunRecord, args: argparse.Namespace) -> str | None:
    if args.storage is not None:
        return str(args.storage)
    if record.storage is not None and "***" in record.storage:
        raise _Refused(
            f"the sweep's storage had a password, which is not recorded ({record.storage}): "
            "give it again with --storage"
        )
    return record.storage


def _request(record: RunRecord, loaded: LoadedPolyaxonfile, args: argparse.Namespace) -> OpRequest:
    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.runtime._connections import load_connections

    return OpRequest(
        loaded=loaded,
        connections=load_connections(args.connections),
        skip_builds=record.skip_builds,
        backend=record.backend,
        use_cache=record.use_cache,
        base_dir=Path(record.base_dir) if record.base_dir else None,
    )


def _new_context(run_path: Path, op_name: str, original: str, cloning_kind: str) -> Any:
    """The new run: in the old run's project and artifacts root, naming the run it came from."""
    from polyaxon_prefect.runtime import new_run_context

    return new_run_context(
        op_name,
        run_path.parent.name,
        artifacts_root=run_path.parent.parent,
        original_uuid=original,
        cloning_kind=cloning_kind,
    )


def _guarded(args: argparse.Namespace, command: Any) -> int:
    """``command()``, with a bad file or a refusal as one line (JSON too under --json)."""
    from polyaxon_prefect.prefect._cli import _invalid

    try:
        return int(command())
    except _Refused as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": str(refusal)}))
        return _USAGE
    except (PolyaxonfileError, PolyaxonPrefectError) as error:
        return _invalid(error, as_json=args.json)


# ----------------------------------------------------------------------------- restart


def _dag_ops(loaded: LoadedPolyaxonfile) -> list[str]:
    """The ops of a DAG run, in the order written; none for a job or a sweep (a sweep of
    DAGs restarts whole: each trial is a DAG of its own)."""
    from polyaxon_prefect.specs import dag_of

    operation = loaded.operation
    component = operation.component
    dag = dag_of(component.run) if component is not None and operation.matrix is None else None
    operations = dag.operations if dag is not None else None
    return [str(op.name) for op in operations or [] if not isinstance(op, str) and op.name]


def _reuse(
    run_path: Path, loaded: LoadedPolyaxonfile, from_op: str | None
) -> tuple[DagReuse | None, str]:
    """What a restarted DAG reuses, and the line that says so."""
    from polyaxon_prefect.dag import DagReuse, restart_point
    from polyaxon_prefect.prefect._record import read_ops

    names = _dag_ops(loaded)
    if from_op is not None and names and from_op not in names:
        raise _Refused(f"--from: the dag has no op `{from_op}`; its ops: {', '.join(names)}")
    records: dict[str, OpRecord] = read_ops(run_path) or {}
    if from_op is None:
        statuses = {name: str(record.status) for name, record in records.items()}
        from_op = restart_point(names, statuses)
        if from_op is None:
            return None, "no op failed or was stopped: the whole dag runs again"
    return DagReuse(from_op, records), (
        f"from op `{from_op}` (the ops that succeeded and are not downstream of it are reused)"
    )


def cmd_restart(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect restart``; returns the exit code."""
    return _guarded(args, lambda: _restart(args))


def _restart(args: argparse.Namespace) -> int:
    import shutil

    from polyaxon_prefect.prefect._cli import run_cli_request
    from polyaxon_prefect.prefect._dispatch import prepare_request
    from polyaxon_prefect.prefect._record import OPERATION_FILE, OPS_FILE, RECORD_FILE, read_record
    from polyaxon_prefect.prefect._request import SweepOptions

    run_path = _run_path(args.run)
    record = read_record(run_path)
    loaded = _load(run_path, record, args)
    request = _request(record, loaded, args).with_(
        sweep=SweepOptions(storage=_storage(record, args))  # the run's, for its sweeps
    )
    note = ""
    if _dag_ops(loaded):
        reuse, note = _reuse(run_path, loaded, args.from_op)
        request = request.with_(reuse=reuse)
    elif args.from_op is not None:
        raise _Refused(
            f"--from: run {record.uuid} is a {record.kind}; only a dag restarts from an op"
        )
    kind = "copy" if args.copy else "restart"
    context = _new_context(run_path, request.op_name, record.uuid, kind)
    if args.copy:
        skip = shutil.ignore_patterns(RECORD_FILE, OPERATION_FILE, OPS_FILE)
        shutil.copytree(run_path, context.run_path, ignore=skip, dirs_exist_ok=True)
    request = prepare_request(request.with_(run_context=context))
    verb = "copying" if args.copy else "restarting"
    line = f"{verb} run {record.uuid} as run {context.uuid}"
    print(line + (f", {note}" if note else ""), file=sys.stderr)
    return run_cli_request(args, request)


# ----------------------------------------------------------------------------- resume


def cmd_resume(args: argparse.Namespace) -> int:
    """Handle ``polyaxon-prefect resume``; returns the exit code."""
    return _guarded(args, lambda: _resume(args))


def _resume(args: argparse.Namespace) -> int:
    from polyaxon_prefect.prefect._cli import run_cli_request
    from polyaxon_prefect.prefect._dispatch import prepare_request
    from polyaxon_prefect.prefect._record import read_record
    from polyaxon_prefect.prefect._request import SweepOptions

    run_path = _run_path(args.run)
    record = read_record(run_path)
    loaded = _load(run_path, record, args)
    if loaded.operation.matrix is None:
        raise _Refused(
            f"run {record.uuid} is a {record.kind}, not a sweep: `resume` continues a sweep's "
            f"study; run it again with `polyaxon-prefect restart {args.run}`"
        )
    if record.study is None:
        raise PolyaxonPrefectError(
            f"sweep run {record.uuid} recorded no study (it ended before opening one): "
            f"run it again with `polyaxon-prefect restart {args.run}`"
        )
    storage = _storage(record, args)
    if args.more is not None:
        loaded, total = _extend(loaded, record.study, storage, args.more)
        print(f"sweep {record.study}: now {total} trials", file=sys.stderr)
    request = _request(record, loaded, args).with_(
        sweep=SweepOptions(resume=True, resume_study=record.study, storage=storage)
    )
    context = _new_context(run_path, request.op_name, record.uuid, "resume")
    request = prepare_request(request.with_(run_context=context))
    print(f"resuming sweep run {record.uuid} as run {context.uuid}", file=sys.stderr)
    return run_cli_request(args, request)


def _extend(
    loaded: LoadedPolyaxonfile, study_name: str, storage: str | None, more: int
) -> tuple[LoadedPolyaxonfile, int]:
    """Grow the study's count by ``more`` before the sweep reopens it: the operation with its
    matrix's count grown too (what the resumed run records, the points a grid reads), and
    the new total."""
    from polyaxon_prefect.runtime import resolve_artifacts_root
    from polyaxon_prefect.search import SweepStudy, SweepStudyError, extend_study

    matrix = loaded.operation.matrix
    assert matrix is not None  # a recorded matrix run
    try:
        study = SweepStudy.open(
            matrix,
            study_name=study_name,
            storage=storage,
            resume=True,
            artifacts_root=resolve_artifacts_root(),
        )
        total = extend_study(study, more)
    except SweepStudyError as error:
        raise _Refused(f"--more: {error}") from None
    operation = loaded.operation.model_copy(update={"matrix": study.matrix})
    return dataclasses.replace(loaded, operation=operation), total
