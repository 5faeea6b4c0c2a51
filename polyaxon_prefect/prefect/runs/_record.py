"""What a top-level run writes into its run directory so that it can be run again.

``restart`` must run the operation that ran, not the file as it is now (edited since, a
``urlRef`` gone, a hub component changed), so every top-level run records, when it starts::

    <run directory>/
        polyaxonfile.yaml   the fully resolved operation (presets, params, refs inlined; what
                            ``compile`` prints): it loads back as a Polyaxonfile
        run.json            how it was run: the kind, the op, the file it came from, the params
                            given, the working directory, the backend, a sweep's storage,
                            trials' deployment and study; ``original_uuid``/``cloning_kind``
                            for a restarted run
        ops.json            a DAG's ops as they ended (status, outputs, uuid, globals...): what
                            ``restart --from`` reuses (rewritten as ops end, at most once
                            a second, and when the DAG ends)

Connections are named in the operation and resolved again from the connections file at each
run; a storage URL's password is masked (``resume`` asks for the URL again then). ``ops.json``
holds the ops' real outputs (a token an op passed on included: ``restart --from`` hands them
on as the first run did), so it is created mode 0600. Writing is best effort: a run directory
that cannot be written does not stop the run, it only cannot be restarted from what it
recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.specs import Status, op_kind

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.runtime import RunContext

__all__ = [
    "OPERATION_FILE",
    "OPS_FILE",
    "RECORD_FILE",
    "OpsFile",
    "RunRecord",
    "note_study",
    "read_ops",
    "read_record",
    "record_ops",
    "record_run",
]

OPERATION_FILE = "polyaxonfile.yaml"
RECORD_FILE = "run.json"
OPS_FILE = "ops.json"
_VERSION = 1


@dataclass(frozen=True)
class RunRecord:
    """``run.json``: how a top-level run was started (the operation is in `OPERATION_FILE`)."""

    kind: str
    op: str
    uuid: str
    files: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    base_dir: str | None = None
    from_legacy: bool = False
    backend: str = "local"
    use_cache: bool = True
    skip_builds: bool = False
    storage: str | None = None
    deployment: str | None = None
    study: str | None = None
    original_uuid: str | None = None
    cloning_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["files"] = list(self.files)
        data["params"] = dict(self.params)
        return {"version": _VERSION, **data}


def safe_storage(url: str | None) -> str | None:
    """A storage URL without its password (``//user:***@``)."""
    if url is None:
        return None
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _base_dir(request: OpRequest) -> str:
    """The directory a job's relative paths were read from (what its process ran in)."""
    if request.base_dir is not None:
        return str(Path(request.base_dir).absolute())
    files = request.loaded.files
    if files and not str(files[0]).startswith(("http://", "https://")):
        return str(Path(files[0]).absolute().parent)
    return str(Path.cwd())


def _given_params(request: OpRequest) -> dict[str, Any]:
    """The params given on top of the file (``-P``, the API's or a deployment form's values)."""
    loaded = request.loaded
    given = {name: loaded.params[name] for name in loaded.given_params if name in loaded.params}
    return {**given, **dict(request.params or {})}


def _write_json(path: Path, data: object, mode: int = 0o666) -> None:
    """``data`` as JSON at ``path``, replaced whole (a reader never sees half a file), created
    with ``mode`` less the umask (0600: a record holding real secret values, owner only)."""
    _write_text(path, json.dumps(data, indent=2, default=str, sort_keys=False), mode)


def _write_text(path: Path, text: str, mode: int = 0o666) -> None:
    """`_write_json` of a text already made."""
    partial = path.with_name(f".{path.name}.partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()  # a partial file left by a killed run keeps its old mode otherwise
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.replace(partial, path)


def record_run(request: OpRequest, context: RunContext) -> None:
    """Write `OPERATION_FILE` and `RECORD_FILE` of the top-level run ``request`` (module
    docstring); a directory that cannot be written is left as it is."""
    import yaml

    from polyaxon_prefect.loading import resolved_document

    record = RunRecord(
        kind=op_kind(request.operation),
        op=request.op_name,
        uuid=context.uuid,
        files=tuple(str(f) for f in request.loaded.files[:1]),
        params=_given_params(request),
        base_dir=_base_dir(request),
        from_legacy=request.loaded.from_legacy,
        backend=request.backend,
        use_cache=request.use_cache,
        skip_builds=request.skip_builds,
        storage=safe_storage(request.sweep.storage),
        deployment=request.sweep.deployment,
        original_uuid=context.original_uuid,
        cloning_kind=context.cloning_kind,
    )
    document = resolved_document(request.loaded)
    with contextlib.suppress(OSError):
        context.run_path.mkdir(parents=True, exist_ok=True)
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: 6x faster, same text
        text = yaml.dump(document, Dumper=dumper, sort_keys=False, default_flow_style=False)
        (context.run_path / OPERATION_FILE).write_text(text)
        _write_json(context.run_path / RECORD_FILE, record.to_dict())


def note_study(run_path: Path, study: str) -> None:
    """Add the sweep's study name to its `RECORD_FILE` (``resume`` continues that study)."""
    path = run_path / RECORD_FILE
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text())
        data["study"] = study
        _write_json(path, data)


def record_ops(run_path: Path, records: Mapping[str, OpRecord], reused: Mapping[str, str]) -> None:
    """Write a DAG's `OPS_FILE`: each ended op's record (``reused``: op -> the run it was
    reused from, on a restart)."""
    ops = {name: _op_entry(record, reused.get(name)) for name, record in records.items()}
    with contextlib.suppress(OSError):  # real outputs (secrets an op passed on): owner only
        _write_json(run_path / OPS_FILE, ops, mode=0o600)


def _op_entry(record: OpRecord, reused_from: str | None) -> dict[str, Any]:
    # its fields as they are, not `dataclasses.asdict`: that deep-copies every value (the
    # globals, the inputs) for a dict that is only written as JSON, the same text
    entry = {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
    entry["tags"] = list(record.tags)
    if reused_from is not None:
        entry["reused_from"] = reused_from
    return entry


class OpsFile:
    """A running DAG's `OPS_FILE`, written again as its ops end: each op's JSON is made once
    (a record never changes once the op ended), so a write costs the file's length, not a
    conversion of every record (seconds per write for thousands of ops). The text is the one
    ``json.dumps(ops, indent=2)`` gives."""

    def __init__(self, run_path: Path) -> None:
        self.path = run_path / OPS_FILE
        self._texts: dict[str, tuple[OpRecord, str | None, str]] = {}

    def _text(self, name: str, record: OpRecord, reused_from: str | None) -> str:
        known = self._texts.get(name)
        if known is not None and known[0] is record and known[1] == reused_from:
            return known[2]
        entry = json.dumps(_op_entry(record, reused_from), indent=2, default=str)
        text = f"  {json.dumps(name)}: " + entry.replace("\n", "\n  ")
        self._texts[name] = (record, reused_from, text)
        return text

    def write(self, records: Mapping[str, OpRecord], reused: Mapping[str, str]) -> None:
        texts = [self._text(n, r, reused.get(n)) for n, r in records.items()]
        body = "{\n" + ",\n".join(texts) + "\n}" if texts else "{}"
        with contextlib.suppress(OSError):  # real outputs (secrets an op passed on): owner only
            _write_text(self.path, body, mode=0o600)


def read_record(run_path: Path) -> RunRecord:
    """The `RECORD_FILE` of ``run_path``; a run that recorded none (made before runs recorded
    themselves, or not a top-level run) is one `PolyaxonPrefectError` line."""
    path = run_path / RECORD_FILE
    if not path.is_file() or not (run_path / OPERATION_FILE).is_file():
        raise PolyaxonPrefectError(
            f"the run in {run_path} recorded no operation ({RECORD_FILE}, {OPERATION_FILE}): "
            "only a top-level run of this version can be run again; run its file with "
            "`polyaxon-prefect run -f`"
        )
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PolyaxonPrefectError(f"cannot read {path}: {exc}") from None
    names = {f.name for f in dataclasses.fields(RunRecord)}
    values = {key: value for key, value in data.items() if key in names}
    values["files"] = tuple(values.get("files") or ())
    return RunRecord(**values)


def read_ops(run_path: Path) -> dict[str, OpRecord] | None:
    """A DAG's `OPS_FILE` as records (None when it has none)."""
    path = run_path / OPS_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    names = {f.name for f in dataclasses.fields(OpRecord)}
    ops: dict[str, OpRecord] = {}
    for name, entry in data.items():
        values = {key: value for key, value in entry.items() if key in names}
        values["status"] = Status(values.get("status") or Status.FAILED)
        values["tags"] = tuple(values.get("tags") or ())
        ops[name] = OpRecord(**values)
    return ops
