"""A run again, from what it recorded: the requests of ``restart`` and ``resume``.

Both start from the run's own record (`polyaxon_prefect.prefect.runs._record`: the resolved
operation
and how it was run), never from the file as it is now, so an edited or deleted file or a dead
``urlRef`` does not matter. The CLI (`_restart_cli`) and the generic deployment's form
(``restart: {run, from}``, `_deploy`) build their requests here and run them as any other.

- restart: the same operation as a new run (``original_uuid``, ``cloning_kind: restart`` or
  ``copy``), with params and presets on top. A DAG restarts from an op (default: its first
  failed or stopped op): the succeeded ops not downstream of it are reused (`DagReuse`).
- resume: a sweep's own study goes on (``run --resume`` for that run, whichever is latest);
  ``more`` lets a finished sweep run that many more trials (`extend_study`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.client.run_files._copy_files import copy_files, tree_files
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._request import OpRequest, SweepOptions
from polyaxon_prefect.prefect.runs._record import (
    OPERATION_FILE,
    OPS_FILE,
    RECORD_FILE,
    RunRecord,
    read_ops,
    read_record,
)

if TYPE_CHECKING:
    from polyaxon_prefect.dag import DagReuse, OpRecord
    from polyaxon_prefect.runtime import Connection, RunContext
    from polyaxon_prefect.specs import LoadedPolyaxonfile

__all__ = ["RestartRefused", "restart_request", "resume_request", "run_path_of"]


class RestartRefused(PolyaxonPrefectError):
    """The run cannot be run again as asked (an op it does not have, a job given ``from``, a
    ``resume`` of what is not a sweep): the CLI's usage error."""


def run_path_of(ref: str) -> Path:
    """The run directory of ``ref``: a uuid with a directory under the artifacts root is enough
    (no server needed); else the run is looked up on the server (`find_run`)."""
    from polyaxon_prefect.prefect.cli._runs_cli import find_run
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


def _load(
    run_path: Path, record: RunRecord, params: Mapping[str, Any], presets: Sequence[str]
) -> LoadedPolyaxonfile:
    """The recorded operation, with the recorded params, then ``params`` and ``presets``."""
    from polyaxon_prefect.loading import load_polyaxonfile

    given = {**record.params, **params}
    loaded = load_polyaxonfile(run_path / OPERATION_FILE, list(presets), given)
    return dataclasses.replace(loaded, from_legacy=record.from_legacy)


def _storage(record: RunRecord, storage: str | None) -> str | None:
    if storage is not None:
        return storage
    if record.storage is not None and "***" in record.storage:
        raise RestartRefused(
            f"the sweep's storage had a password, which is not recorded ({record.storage}): "
            "give it again with --storage"
        )
    return record.storage


def _request(
    record: RunRecord,
    loaded: LoadedPolyaxonfile,
    connections: Mapping[str, Connection] | None,
    storage: str | None,
) -> OpRequest:
    return OpRequest(
        loaded=loaded,
        connections=connections,
        skip_builds=record.skip_builds,
        backend=record.backend,
        use_cache=record.use_cache,
        base_dir=Path(record.base_dir) if record.base_dir else None,
        # the run's, for its sweeps (at any depth)
        sweep=SweepOptions(storage=_storage(record, storage), deployment=record.deployment),
    )


def _new_context(run_path: Path, op_name: str, original: str, cloning_kind: str) -> RunContext:
    """The new run: in the old run's project and artifacts root, naming the run it came from."""
    from polyaxon_prefect.runtime import new_run_context

    return new_run_context(
        op_name,
        run_path.parent.name,
        artifacts_root=run_path.parent.parent,
        original_uuid=original,
        cloning_kind=cloning_kind,
    )


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
    run_path: Path, names: list[str], from_op: str | None, force: Sequence[str]
) -> tuple[DagReuse | None, str]:
    """What a restarted DAG reuses, and the words that say so."""
    from polyaxon_prefect.dag import DagReuse, restart_point

    if from_op is not None and from_op not in names:
        raise RestartRefused(f"--from: the dag has no op `{from_op}`; its ops: {', '.join(names)}")
    for op in force:
        if op not in names:
            raise RestartRefused(f"--force: the dag has no op `{op}`; its ops: {', '.join(names)}")
    forced = f"; forced to run again: {', '.join(f'`{op}`' for op in force)}" if force else ""
    records: dict[str, OpRecord] = read_ops(run_path) or {}
    if from_op is None:
        statuses = {name: str(record.status) for name, record in records.items()}
        from_op = restart_point(names, statuses)
    if from_op is None:
        note = (
            "no op failed or was stopped: the whole dag runs again, the op cache serving the "
            "ops whose spec, params and code are unchanged" + forced
        )
        return (DagReuse(None, records, frozenset(force)) if force else None), note
    return DagReuse(from_op, records, frozenset(force)), (
        f"from op `{from_op}` (the ops that succeeded and are not downstream of it are reused "
        f"while their code is unchanged){forced}"
    )


def restart_request(
    ref: str,
    *,
    from_op: str | None = None,
    force: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    presets: Sequence[str] = (),
    copy: bool = False,
    connections: Mapping[str, Connection] | None = None,
    storage: str | None = None,
) -> tuple[OpRequest, str]:
    """The request that runs run ``ref`` again (module docstring), with its run context made
    (and, with ``copy``, its directory copied from the old one), and the line that says what
    it does.

    Raises:
        RestartRefused: ``from_op`` or a ``force`` op is not an op of the DAG, or the run is
            not a DAG.
        PolyaxonPrefectError: no such run, or it recorded nothing (`read_record`).
        PolyaxonfileError: a param or preset given does not fit the operation.
    """
    run_path = run_path_of(ref)
    record = read_record(run_path)
    loaded = _load(run_path, record, params or {}, presets)
    request = _request(record, loaded, connections, storage)
    note = ""
    names = _dag_ops(loaded)
    if names:
        reuse, note = _reuse(run_path, names, from_op, list(dict.fromkeys(force)))
        request = request.with_(reuse=reuse)
    elif from_op is not None or force:
        flag = "--from" if from_op is not None else "--force"
        raise RestartRefused(
            f"{flag}: run {record.uuid} is a {record.kind}; only a dag's ops are named "
            "(a job runs again whole; `run --no-cache` skips its cache)"
        )
    context = _new_context(run_path, request.op_name, record.uuid, "copy" if copy else "restart")
    skipped: list[str] = []
    if copy:  # its files and directories only: a link or a FIFO is named, never followed
        files, skipped = tree_files(run_path, skip=(RECORD_FILE, OPERATION_FILE, OPS_FILE))
        copy_files(((run_path / f, f) for f in files), context.run_path)
    line = f"{'copying' if copy else 'restarting'} run {record.uuid} as run {context.uuid}"
    line += f", {note}" if note else ""
    return request.with_(run_context=context), "\n".join([line, *skipped])


# ----------------------------------------------------------------------------- resume


def resume_request(
    ref: str,
    *,
    more: int | None = None,
    connections: Mapping[str, Connection] | None = None,
    storage: str | None = None,
) -> tuple[OpRequest, str]:
    """The request that continues the study of sweep run ``ref`` (``more``: that many trials
    beyond its count), and the line that says what it does.

    Raises:
        RestartRefused: the run is not a sweep, or ``more`` cannot be added (`extend_study`).
        PolyaxonPrefectError: no such run, it recorded nothing, or no study.
    """
    run_path = run_path_of(ref)
    record = read_record(run_path)
    loaded = _load(run_path, record, {}, ())
    if loaded.operation.matrix is None:
        raise RestartRefused(
            f"run {record.uuid} is a {record.kind}, not a sweep: `resume` continues a sweep's "
            f"study; run it again with `polyaxon-prefect restart {ref}`"
        )
    if record.study is None:
        raise PolyaxonPrefectError(
            f"sweep run {record.uuid} recorded no study (it ended before opening one): "
            f"run it again with `polyaxon-prefect restart {ref}`"
        )
    request = _request(record, loaded, connections, storage)
    line = f"resuming sweep run {record.uuid}"
    if more is not None:
        loaded, total = _extend(loaded, record.study, request.sweep.storage, more)
        request = request.with_(loaded=loaded)
        line += f" ({record.study}: now {total} trials)"
    context = _new_context(run_path, request.op_name, record.uuid, "resume")
    sweep = dataclasses.replace(request.sweep, resume=True, resume_study=record.study)
    return request.with_(sweep=sweep, run_context=context), f"{line} as run {context.uuid}"


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
        raise RestartRefused(f"--more: {error}") from None
    operation = loaded.operation.model_copy(update={"matrix": study.matrix})
    return dataclasses.replace(loaded, operation=operation), total
