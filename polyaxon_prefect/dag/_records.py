"""What a finished DAG op exposes to the ops after it, and how a ref path reads it.

Refs (``ref: ops.X, value: outputs.loss``), join params (``value: globals.uuid``) and conditions
(``ops.X.outputs.loss``) all read the same few things from an upstream run. Keeping the record and
the path reader in one place means the three cannot disagree on what ``globals.status`` or
``artifacts.outputs`` is.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.specs import Status

__all__ = [
    "MISSING",
    "DagScope",
    "OpRecord",
    "op_sources",
    "read_path",
    "record_artifacts",
    "record_globals",
]


class _Missing:
    """Marker for "the record has no such value" (``None`` is a legitimate output value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class OpRecord:
    """What a DAG op run exposes to refs, conditions and joins of later ops.

    ``status`` is how it ended (``succeeded``, ``failed``, ``stopped``, ``skipped``,
    ``upstream_failed``). ``inputs`` are the params it ran with; ``metrics`` the last value of each
    metric; ``globals`` its run's ``RunContext.globals_dict()`` (empty for an op that never ran).
    ``kind`` (``job``, ``dag``, ``matrix``), ``component`` (its component's name) and ``tags`` are
    only read by join queries (``kind: job``, ``hub.name: trainer``, ``tags: a``).
    ``code``: the code hash of a job op (None for other ops, or one not hashed).
    """

    name: str
    status: Status
    uuid: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    outputs: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)
    globals: Mapping[str, Any] = field(default_factory=dict)
    artifacts_path: str | None = None
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    kind: str | None = None
    component: str | None = None
    tags: tuple[str, ...] = ()
    code: str | None = None
    """A job op's code hash when it ran (its working folder's files, interpreter, image): a
    restart reuses the op only while its code hash is still this one."""


def record_globals(record: OpRecord) -> dict[str, Any]:
    """The run's globals with the record's own facts on top (``status`` is only known here)."""
    values = dict(record.globals)
    values["status"] = record.status
    values.setdefault("name", record.name)
    if record.uuid is not None:
        values.setdefault("uuid", record.uuid)
    if record.artifacts_path is not None:
        values.setdefault("run_artifacts_path", record.artifacts_path)
    return values


def record_artifacts(record: OpRecord) -> dict[str, Any]:
    """Polyaxon's ``artifacts`` of a run: ``base`` (its artifacts folder) and ``outputs``.

    Polyaxon gives ``{base: <uuid>, outputs: <uuid>/outputs}`` relative to its artifacts store;
    locally the absolute folders are what a downstream process can open. Lineage names are the
    run's inputs and outputs (a ``path``/``s3``/``artifacts`` input is its own lineage).
    """
    run_globals = record.globals
    base = record.artifacts_path or run_globals.get("run_artifacts_path")
    outputs = run_globals.get("run_outputs_path")
    if outputs is None and base is not None:
        outputs = posixpath.join(str(base), "outputs")
    artifacts: dict[str, Any] = {**dict(record.inputs), **dict(record.outputs)}
    artifacts["base"] = None if base is None else str(base)
    artifacts["outputs"] = None if outputs is None else str(outputs)
    return artifacts


def _prefix_artifacts(value: Mapping[str, Any], base: str | None) -> dict[str, Any]:
    """An ArtifactsType dict (``{files: [...], dirs: [...]}``) with paths under the run's base."""
    out: dict[str, Any] = {}
    for key, paths in value.items():
        items = paths if isinstance(paths, list | tuple) else [paths]
        out[key] = [posixpath.join(base, str(p)) if base else str(p) for p in items]
    return out


def read_path(
    sources: Mapping[str, Any], parts: Sequence[str] | Mapping[str, Any], *, base: str | None = None
) -> Any:
    """Read a ref path (``("outputs", "loss")``) from ``sources`` (``inputs``, ``outputs``,
    ``globals``, ``artifacts`` mappings); `MISSING` when absent.

    One part returns the whole mapping (``io`` is inputs, outputs and artifacts together); three
    parts (``artifacts.<name>.<path>``) read inside a dict or join a path. A mapping instead of
    parts is an ArtifactsType value, returned with its paths prefixed by ``base``.
    """
    if isinstance(parts, Mapping):
        return _prefix_artifacts(parts, base)
    head, *rest = parts
    if head == "io":
        if rest:
            return MISSING
        return {key: dict(sources.get(key) or {}) for key in ("inputs", "outputs", "artifacts")}
    if head not in sources:
        return MISSING
    value: Any = sources[head]
    for part in rest:
        if isinstance(value, Mapping):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, str) and head == "artifacts":
            value = posixpath.join(value, part)
        else:
            return MISSING
    return dict(value) if isinstance(value, Mapping) else value


def op_sources(record: OpRecord) -> dict[str, Any]:
    """The four mappings a ref to ``ops.<record>`` reads from."""
    return {
        "inputs": dict(record.inputs),
        "outputs": dict(record.outputs),
        "globals": record_globals(record),
        "artifacts": record_artifacts(record),
    }


@dataclass(frozen=True)
class DagScope:
    """What the ops of one DAG run can read.

    ``inputs`` are the DAG's own typed params, ``globals`` its run's
    ``RunContext.globals_dict()``, ``records`` the ops finished so far (in the order they
    finished: joins without ``sort`` keep it).
    """

    inputs: Mapping[str, Any]
    globals: Mapping[str, Any]
    records: Mapping[str, OpRecord]
