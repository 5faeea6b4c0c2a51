"""Convert a legacy (v0.x) Polyaxonfile into v1.1 data.

``kind: experiment`` (and ``job``) becomes a ``component``; ``kind: group`` becomes an
``operation`` holding the component inline plus a ``matrix``. Replica topologies map onto the
Kubeflow run kinds:

============  ==============  ===============================  ==========================
framework     run kind        main pod (``environment``)        ``n_workers`` / ``n_ps``
============  ==============  ===============================  ==========================
tensorflow    ``tfjob``       ``chief`` (1 replica)             ``worker`` / ``ps``
pytorch       ``pytorchjob``  ``master`` (1 replica)            ``worker``
mxnet         ``mxjob``       ``scheduler`` (1 replica)         ``worker`` / ``server``
horovod, mpi  ``mpijob``      ``launcher`` (1 replica)          ``worker``
============  ==============  ===============================  ==========================

Legacy Polyaxon always started that main pod ("By default polyaxon creates a master job"),
with the top-level ``environment`` settings; every replica ran the same command, except that
for MPI the launcher alone runs it. A replica type gets only its own ``default_*`` settings
(legacy did not copy the master's node selector or affinity to workers either). Per-index
``worker``/``ps`` entries become ``indexOverrides`` on the replica, each overriding whole
properties (resources, tolerations...) exactly as legacy did.

Whatever has no v1.1 equivalent is dropped or approximated, and each time a `Note` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from polyaxon_prefect._source import Positions, problems_from_validation_error
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.legacy._checks import check_rules
from polyaxon_prefect.legacy._convert_base import (
    Note,
    Path,
    infer_type,
)
from polyaxon_prefect.legacy._convert_matrix import MatrixConverter
from polyaxon_prefect.legacy._convert_run import RunConverter
from polyaxon_prefect.legacy._detect import is_legacy
from polyaxon_prefect.legacy._schema import (
    FRAMEWORK_BLOCKS,
    LegacyFile,
    LegacyIO,
)

__all__ = ["LegacyConversion", "Note", "convert", "is_legacy"]

_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")


@dataclass(frozen=True)
class LegacyConversion:
    """The v1.1 YAML-shaped data (camelCase keys) and the notes on what changed."""

    data: dict[str, Any]
    notes: list[Note] = field(default_factory=list)


def convert(data: dict[str, Any], *, positions: Positions | None = None) -> LegacyConversion:
    """Validate a legacy Polyaxonfile and convert it to v1.1 data.

    Raises `PolyaxonfileError` with every problem found (located with ``positions`` when
    given); never lets a validation traceback through.
    """
    if not isinstance(data, dict):
        raise PolyaxonfileError(
            [Problem("a Polyaxonfile must be a mapping of sections", rule="legacy_type")]
        )
    notes: list[Note] = []
    data = _normalize(data, notes)
    problems = _validate(data, positions)
    if problems:
        raise PolyaxonfileError(problems)
    spec = LegacyFile.model_validate(data)
    converter = _Converter(spec, notes)
    result = converter.run()
    if converter.problems:
        raise PolyaxonfileError([_locate(p, positions) for p in converter.problems])
    return LegacyConversion(data=result, notes=notes)


def _locate(problem: Problem, positions: Positions | None) -> Problem:
    return positions.problem(problem) if positions is not None else problem


def _validate(data: dict[str, Any], positions: Positions | None) -> list[Problem]:
    where = positions if positions is not None else Positions()
    problems: list[Problem] = []
    try:
        LegacyFile.model_validate(data)
    except ValidationError as exc:
        problems += problems_from_validation_error(exc, data, where, root=LegacyFile)
    seen = {(p.path, p.message) for p in problems}
    for problem in check_rules(data):
        if (problem.path, problem.message) not in seen:
            problems.append(where.problem(problem))
    return problems


def _normalize(data: dict[str, Any], notes: list[Note]) -> dict[str, Any]:
    """Fill in what very old files left implicit, before validation."""
    data = dict(data)
    if "kind" not in data:
        tuning = data.get("hptuning") or data.get("settings")
        kind = "group" if isinstance(tuning, dict) and tuning.get("matrix") else "experiment"
        data["kind"] = kind
        notes.append(Note((), f"no `kind` given; read as `kind: {kind}`"))
    if "version" not in data:
        data["version"] = 1
    environment = data.get("environment")
    if isinstance(environment, dict):
        environment = dict(environment)
        for key in ("replicas", *FRAMEWORK_BLOCKS):
            block = environment.get(key)
            if isinstance(block, dict) and any(k in _FLAT_REPLICA_KEYS for k in block):
                environment[key] = _unflatten(block, ("environment", key), notes)
        data["environment"] = environment
    return data


# 0.1 wrote per-replica settings as flat keys: name -> (replica key, property, is_indexed)
_FLAT_REPLICA_KEYS = {
    "default_worker_resources": ("default_worker", "resources", False),
    "default_ps_resources": ("default_ps", "resources", False),
    "worker_resources": ("worker", "resources", True),
    "ps_resources": ("ps", "resources", True),
    "default_worker_node_selectors": ("default_worker", "node_selector", False),
    "default_ps_node_selectors": ("default_ps", "node_selector", False),
    "worker_node_selectors": ("worker", "node_selector", True),
    "ps_node_selectors": ("ps", "node_selector", True),
}


def _unflatten(block: dict[str, Any], path: Path, notes: list[Note]) -> dict[str, Any]:
    """Rewrite 0.1's ``default_worker_resources``/``worker_resources: [{index, cpu...}]``
    into the later ``default_worker: {resources}``/``worker: [{index, resources}]`` shape."""
    out = {k: v for k, v in block.items() if k not in _FLAT_REPLICA_KEYS}
    for flat, (target, prop, indexed) in _FLAT_REPLICA_KEYS.items():
        if flat not in block:
            continue
        value = block[flat]
        notes.append(Note((*path, flat), f"0.1 spelling; read as `{target}` {prop}"))
        if not indexed:
            current = out.get(target)
            out[target] = {**(current if isinstance(current, dict) else {}), prop: value}
            continue
        if not isinstance(value, list):
            out[flat] = value  # let validation report it
            continue
        items: list[Any] = list(out.get(target) or [])
        for entry in value:
            if not isinstance(entry, dict):
                items.append(entry)
                continue
            rest = {k: v for k, v in entry.items() if k != "index"}
            existing = next(
                (i for i in items if isinstance(i, dict) and i.get("index") == entry.get("index")),
                None,
            )
            if existing is None:
                items.append({"index": entry.get("index"), prop: rest})
            else:
                existing[prop] = rest
        out[target] = items
    return out


_IO_TYPES = {"gcs_path": "gcs", "s3_path": "s3", "azure_path": "wasb", "dict_of_dicts": "dict"}


class _Converter(RunConverter, MatrixConverter):
    """The conversion of one validated legacy file (the ``run`` part in `RunConverter`, the
    matrix in `MatrixConverter`)."""

    # ----- top level -----

    def run(self) -> dict[str, Any]:
        spec = self.spec
        if spec.kind in ("notebook", "tensorboard", "build", "pipeline"):
            hints = {
                "notebook": "write a `kind: component` with `run.kind: service` running jupyter",
                "tensorboard": "write a `kind: component` with `run.kind: service` running "
                "tensorboard",
                "build": "use a v1.1 `build` section with a builder component (hubRef)",
                "pipeline": "write a v1.1 `run.kind: dag` component",
            }
            self.problems.append(
                Problem(
                    f"a legacy `kind: {spec.kind}` file cannot be upgraded automatically",
                    rule="legacy_unsupported_kind",
                    path=("kind",),
                    hint=hints[spec.kind],
                )
            )
            return {}
        self._note_dropped_top()
        component = self._component()
        if spec.kind != "group":
            return {"version": 1.1, "kind": "component", **self._header(), **component}
        tuning_key = "hptuning" if spec.hptuning is not None else "settings"
        tuning = spec.hptuning if spec.hptuning is not None else spec.settings
        assert tuning is not None  # checked in _checks
        matrix = self._matrix(tuning, (tuning_key,))
        self._add_matrix_inputs(component, tuning, (tuning_key,))
        return {
            "version": 1.1,
            "kind": "operation",
            **self._header(),
            "matrix": matrix,
            "component": {"kind": "component", **component},
        }

    def _header(self) -> dict[str, Any]:
        spec = self.spec
        out: dict[str, Any] = {}
        if spec.name is not None:
            name = spec.name
            if not _NAME.match(name):
                name = re.sub(r"[^-a-zA-Z0-9_]+", "-", name).strip("-") or "upgraded"
                self.note(
                    ("name",),
                    f"renamed `{spec.name}` to `{name}`: v1.1 names allow "
                    "only letters, digits, `-` and `_`",
                )
            out["name"] = name
        if spec.description is not None:
            out["description"] = spec.description
        if spec.tags:
            out["tags"] = list(spec.tags)
        return out

    def _note_dropped_top(self) -> None:
        spec = self.spec
        if spec.backend in ("other", "external"):
            self.note(("backend",), f"backend `{spec.backend}` has no v1.1 equivalent; dropped")
        has_replicas = spec.environment is not None and self._replicas() is not None
        if spec.framework is not None and not has_replicas and spec.backend != "mpi":
            self.note(
                ("framework",),
                f"framework `{spec.framework}` only labelled the run when no replicas are "
                "defined; dropped",
            )
        if spec.logging is not None and spec.logging.formatter is not None:
            self.note(
                ("logging", "formatter"), "log formatters are not configurable in v1.1; dropped"
            )
        if spec.settings is not None:
            self.note(("settings",), "`settings` is the 0.1 name of `hptuning`; converted as such")
            if spec.settings.logging is not None:
                self.note(("settings", "logging"), "dropped (no v1.1 equivalent)")

    # ----- component -----

    def _component(self) -> dict[str, Any]:
        spec = self.spec
        out: dict[str, Any] = {}
        inputs = self._inputs()
        if inputs:
            out["inputs"] = inputs
        outputs = self._ios(spec.outputs, ("outputs",))
        if outputs:
            out["outputs"] = outputs
        env = spec.environment
        if env is not None and env.max_restarts is not None:
            out["termination"] = {"maxRetries": env.max_restarts}
            self.note(
                ("environment", "max_restarts"),
                "mapped to `termination.maxRetries` (retries of the whole run)",
            )
        if spec.logging is not None and spec.logging.level is not None:
            out["plugins"] = {"logLevel": spec.logging.level}
        out["run"] = self._run()
        return out

    def _inputs(self) -> list[dict[str, Any]]:
        spec = self.spec
        inputs = self._ios(spec.inputs, ("inputs",))
        declared = {io["name"] for io in inputs}
        params: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for section in ("declarations", "params"):
            values = getattr(spec, section)
            if not values:
                continue
            for key, value in values.items():
                if key in params:
                    self.note(
                        (section, key), f"also set in `declarations`; the `{section}` value wins"
                    )
                params[key] = value
                sources[key] = section
        for key, value in params.items():
            if key in declared:
                self.note(
                    (sources[key], key),
                    "already declared in `inputs`; the declaration only sets its default value",
                )
                for existing in inputs:
                    if existing["name"] == key:
                        existing["value"] = value
                        existing["isOptional"] = True
                continue
            io: dict[str, Any] = {"name": str(key)}
            io_type = infer_type(value)
            if io_type is not None:
                io["type"] = io_type
            io["value"] = value
            io["isOptional"] = True
            inputs.append(io)
        return inputs

    def _ios(self, ios: list[LegacyIO] | None, path: Path) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for index, io in enumerate(ios or []):
            item: dict[str, Any] = {"name": io.name}
            if io.description is not None:
                item["description"] = io.description
            if io.type is not None:
                item["type"] = _IO_TYPES.get(io.type, io.type)
                if io.type in _IO_TYPES:
                    self.note(
                        (*path, index, "type"),
                        f"type `{io.type}` is called `{item['type']}` in v1.1",
                    )
            value = io.value if io.value is not None else io.default
            if value is not None:
                item["value"] = value
            if io.is_optional is not None or value is not None:
                item["isOptional"] = bool(io.is_optional) or value is not None
            if io.is_list:
                item["isList"] = True
            if io.is_flag:
                item["isFlag"] = True
            if io.options:
                item["validation"] = {"options": list(io.options)}
            out.append(item)
        return out
