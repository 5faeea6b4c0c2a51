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

import copy
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from polyaxon_prefect._source import Positions, problems_from_validation_error
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem, format_path
from polyaxon_prefect.legacy._checks import check_rules
from polyaxon_prefect.legacy._detect import is_legacy
from polyaxon_prefect.legacy._schema import (
    DISTRIBUTION_KEYS,
    FRAMEWORK_BLOCKS,
    Build,
    EarlyStopping,
    HPTuning,
    IfCmd,
    LegacyFile,
    LegacyIO,
    MatrixEntry,
    PodEnvironment,
    PodResources,
    Replicas,
    Run,
    space_items,
)
from polyaxon_prefect.specs import MAIN_REPLICAS

__all__ = ["LegacyConversion", "Note", "convert", "is_legacy"]


Path = tuple[str | int, ...]

_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")
_RUN_KIND = {
    "tensorflow": "tfjob",
    "pytorch": "pytorchjob",
    "mxnet": "mxjob",
    "horovod": "mpijob",
    "mpi": "mpijob",
}


@dataclass(frozen=True)
class Note:
    """Something of the legacy file that was dropped or approximated, and where it was."""

    path: Path
    message: str

    def format(self) -> str:
        where = format_path(self.path) if self.path else "<file>"
        return f"{where}: {self.message}"


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


# --- helpers -----------------------------------------------------------------------------


def _number(value: float | int) -> float | int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _memory(value: float | int) -> str:
    return f"{_number(value)}Mi"


_RESOURCE_NAMES = {
    "cpu": ("cpu", _number),
    "memory": ("memory", _memory),
    "gpu": ("nvidia.com/gpu", _number),
    "tpu": ("cloud-tpus.google.com/v2", _number),
}


def _infer_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return None


def _common_type(values: Sequence[Any]) -> str | None:
    types = {_infer_type(v) for v in values}
    if len(types) == 1:
        return next(iter(types))
    if types == {"int", "float"}:
        return "float"
    return None


_IO_TYPES = {"gcs_path": "gcs", "s3_path": "s3", "azure_path": "wasb", "dict_of_dicts": "dict"}


class _Converter:
    def __init__(self, spec: LegacyFile, notes: list[Note]) -> None:
        self.spec = spec
        self.notes = notes
        self.problems: list[Problem] = []

    def note(self, path: Path, message: str) -> None:
        self.notes.append(Note(tuple(path), message))

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
                for io in inputs:
                    if io["name"] == key:
                        io["value"] = value
                        io["isOptional"] = True
                continue
            io: dict[str, Any] = {"name": str(key)}
            io_type = _infer_type(value)
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

    # ----- run -----

    def _run(self) -> dict[str, Any]:
        spec = self.spec
        env = spec.environment
        container = self._container()
        replicas = self._replicas()
        main_env, main_resources, env_from = self._pod(env, ("environment",))
        if main_resources:
            container["resources"] = main_resources
        if env_from:
            container["envFrom"] = env_from
        if replicas is None:
            run: dict[str, Any] = {"kind": "job"}
            if main_env:
                run["environment"] = main_env
            run["container"] = container
            return run
        block_key, block, framework = replicas
        kind = "mpijob" if spec.backend == "mpi" else _RUN_KIND[framework]
        path: Path = ("environment", block_key)
        if block_key != "replicas":
            self.note(
                path,
                f"the 0.1-0.4 `environment.{block_key}` block is read as `environment.replicas`",
            )
        if spec.backend == "kubeflow":
            self.note(("backend",), "the Kubeflow operators now run every distributed kind")
        run = {"kind": kind}
        main: dict[str, Any] = {"replicas": 1}
        if main_env:
            main["environment"] = main_env
        main["container"] = container
        run[MAIN_REPLICAS[kind]] = main
        base = {k: v for k, v in container.items() if k not in ("resources",)}
        if kind == "mpijob":
            base.pop("command", None)
            base.pop("args", None)
            self.note(
                path,
                "MPI: only the launcher runs the command (it must start the workers, "
                "e.g. with `mpirun`); workers get the image and settings only",
            )
        worker = self._replica(block, "worker", block.n_workers, base, path)
        if worker is not None:
            run["worker"] = worker
        ps_name = "server" if kind == "mxjob" else "ps"
        if kind in ("tfjob", "mxjob"):
            ps = self._replica(block, "ps", block.n_ps, base, path, target=ps_name)
            if ps is not None:
                run[ps_name] = ps
        if kind == "mxjob":
            run["mode"] = "MXTrain"
        if block.delay_workers_by_global_step is not None:
            self.note((*path, "delay_workers_by_global_step"), "no v1.1 equivalent; dropped")
        if block.run_config is not None:
            self.note((*path, "run_config"), "no v1.1 equivalent; dropped")
        return run

    def _replicas(self) -> tuple[str, Replicas, str] | None:
        env = self.spec.environment
        if env is None:
            return None
        for key in ("replicas", *FRAMEWORK_BLOCKS):
            block = getattr(env, key)
            if block is not None:
                if self.spec.backend == "mpi":
                    return key, block, "mpi"
                framework = key if key != "replicas" else self.spec.framework
                assert framework is not None  # checked in _checks
                return key, block, framework
        return None

    def _replica(
        self,
        block: Replicas,
        name: str,
        count: int | None,
        base: dict[str, Any],
        path: Path,
        *,
        target: str | None = None,
    ) -> dict[str, Any] | None:
        default: PodEnvironment | None = getattr(block, f"default_{name}")
        indexed: list[PodEnvironment] = getattr(block, name) or []
        if not count:
            for key in (f"default_{name}", name):
                if getattr(block, key) is not None:
                    self.note(
                        (*path, key),
                        f"ignored: there are no {name} replicas "
                        f"(`n_{'workers' if name == 'worker' else 'ps'}` is not set)",
                    )
            return None
        replica: dict[str, Any] = {"replicas": count}
        container = copy.deepcopy(base)
        if default is not None:
            env, resources, env_from = self._pod(default, (*path, f"default_{name}"))
            if env:
                replica["environment"] = env
            if resources:
                container["resources"] = resources
            if env_from:
                container["envFrom"] = env_from
        replica["container"] = container
        overrides: dict[int, dict[str, Any]] = {}
        for position, item in enumerate(indexed):
            item_path = (*path, name, position)
            assert item.index is not None  # checked by the schema
            if item.index >= count:
                self.note(
                    item_path,
                    f"index {item.index} is out of range for {count} "
                    f"{target or name} replicas; ignored",
                )
                continue
            env, resources, env_from = self._pod(item, item_path, allow_refs=False)
            override: dict[str, Any] = {}
            if env:
                override["environment"] = env
            if resources:
                override["resources"] = resources
            if override:
                overrides[item.index] = override
        if overrides:
            replica["indexOverrides"] = dict(sorted(overrides.items()))
        return replica

    def _container(self) -> dict[str, Any]:
        spec = self.spec
        container: dict[str, Any] = {}
        build: Build | None = spec.build
        run: Run | None = spec.run
        image = build.image if build is not None else None
        if run is not None and run.image:
            if image and image != run.image:
                self.note(("run", "image"), "`build.image` is used; `run.image` is ignored")
            image = image or run.image
        if image:
            container["image"] = image
        if build is not None:
            self._note_build(build)
        if run is not None:
            container["command"] = ["/bin/bash", "-c", self._cmd(run.cmd)]
            for key in ("steps", "build_steps"):
                if getattr(run, key):
                    self.note(
                        ("run", key), "build steps are not run by v1.1; bake them into the image"
                    )
        elif spec.kind in ("experiment", "group", "job"):
            self.note((), "no `run.cmd`: the container runs its image's default command")
        env_vars = list((build.env_vars if build else None) or [])
        env_vars += list((run.env_vars if run else None) or [])
        if env_vars:
            container["env"] = [
                {"name": str(key), "value": _env_value(value)} for key, value in env_vars
            ]
        return container

    def _note_build(self, build: Build) -> None:
        if build.dockerfile:
            self.note(
                ("build", "dockerfile"),
                "v1.1 builds images with a builder operation; "
                "build this Dockerfile and set `container.image` yourself",
            )
        if build.build_steps:
            self.note(
                ("build", "build_steps"),
                "build steps are not run by v1.1; bake them into "
                "the image (or add a `build` section with a builder component)",
            )
        for key in ("context", "lang_env", "commit", "branch", "ref", "nocache", "backend"):
            if getattr(build, key) is not None:
                self.note(("build", key), "build option with no v1.1 equivalent; dropped")
        if build.env_vars:
            self.note(("build", "env_vars"), "set as `container.env` at run time")

    def _cmd(self, cmd: str | list[str] | IfCmd) -> str:
        if isinstance(cmd, IfCmd):
            return self._if_cmd(cmd)
        commands = [cmd] if isinstance(cmd, str) else list(cmd)
        cleaned: list[str] = []
        for command in commands:
            text = command.strip()
            # A plain multi-line YAML scalar folds `\`-continued lines into `... \ --flag`,
            # which bash would read as an escaped space glued to the next argument.
            fixed = re.sub(r"\s\\\s+", " ", text)
            if fixed != text:
                self.note(
                    ("run", "cmd"),
                    "removed the ` \\ ` line continuations that YAML folded into the command",
                )
            cleaned.append(fixed)
        return " && ".join(cleaned)

    def _if_cmd(self, cmd: IfCmd) -> str:
        """The ``if`` operator as one Jinja template: v1.1 renders it with the params."""
        operator = cmd.if_
        cond = operator.cond.strip()
        whole = re.fullmatch(r"\{\{(.*)\}\}", cond, flags=re.DOTALL)
        if whole and "{{" not in whole.group(1):
            cond = whole.group(1).strip()  # `{{ lr > 0.1 }}` and `lr > 0.1` mean the same
        text = "{% if " + cond + " %}" + self._cmd(operator.do) + "{% else %}"
        if operator.else_do is not None:
            text += self._cmd(operator.else_do)
        else:
            text += "true"  # nothing to run: succeed
        text += "{% endif %}"
        self.note(
            ("run", "cmd", "if"),
            f"the `if` operator is a Jinja condition over the params: runs `do` when "
            f"`{cond}` holds, else {'`else_do`' if operator.else_do is not None else 'nothing'}",
        )
        return text

    def _pod(
        self, env: PodEnvironment | None, path: Path, *, allow_refs: bool = True
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """The v1.1 ``environment``, container ``resources`` and ``envFrom`` of a legacy pod."""
        if env is None:
            return {}, {}, []
        out: dict[str, Any] = {}
        if env.labels:
            out["labels"] = {k: str(v) for k, v in env.labels.items()}
        if env.annotations:
            out["annotations"] = {k: str(v) for k, v in env.annotations.items()}
        if env.node_selector:
            out["nodeSelector"] = {k: str(v) for k, v in env.node_selector.items()}
        if env.affinity:
            out["affinity"] = env.affinity
        if env.tolerations:
            out["tolerations"] = env.tolerations
        if env.service_account:
            out["serviceAccountName"] = env.service_account
        if env.image_pull_secrets:
            out["imagePullSecrets"] = list(env.image_pull_secrets)
        resources = self._resources(env.resources, (*path, "resources"))
        env_from: list[dict[str, Any]] = []
        refs = [
            ("secret_refs", env.secret_refs, "secretRef"),
            (
                "config_map_refs" if env.config_map_refs is not None else "configmap_refs",
                env.all_config_map_refs,
                "configMapRef",
            ),
        ]
        for key, names, ref in refs:
            if not names:
                continue
            if allow_refs:
                env_from += [{ref: {"name": name}} for name in names]
                self.note((*path, key), f"exposed as `container.envFrom` {ref}s")
            else:
                self.note((*path, key), "per-replica refs are not supported; dropped")
        for key in ("data_refs", "artifact_refs", "outputs", "persistence"):
            if getattr(env, key) is not None:
                self.note(
                    (*path, key),
                    "no v1.1 equivalent (use connections and init containers); dropped",
                )
        if env.max_restarts is not None and path != ("environment",):
            self.note((*path, "max_restarts"), "per-replica restarts are not supported; dropped")
        if env.index is not None and path == ("environment",):
            self.note((*path, "index"), "only meaningful inside `worker`/`ps` lists; dropped")
        return out, resources, env_from

    def _resources(self, resources: PodResources | None, path: Path) -> dict[str, Any]:
        if resources is None:
            return {}
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for key, (name, cast) in _RESOURCE_NAMES.items():
            item = getattr(resources, key)
            if item is None:
                continue
            if item.the_requests is not None:
                requests[name] = cast(item.the_requests)
            if item.the_limits is not None:
                limits[name] = cast(item.the_limits)
            if key == "tpu":
                self.note(
                    (*path, "tpu"),
                    "mapped to `cloud-tpus.google.com/v2`; check the TPU "
                    "resource name of your cluster",
                )
        out: dict[str, Any] = {}
        if requests:
            out["requests"] = requests
        if limits:
            out["limits"] = limits
        return out

    # ----- matrix -----

    def _matrix(self, tuning: HPTuning, path: Path) -> dict[str, Any]:
        params = {
            name: self._hp(entry, (*path, "matrix", name))
            for name, entry in (tuning.matrix or {}).items()
        }
        matrix: dict[str, Any]
        if tuning.random_search is not None:
            matrix = {"kind": "random", "numRuns": tuning.random_search.n_experiments}
            if tuning.seed is not None:
                matrix["seed"] = tuning.seed
        elif tuning.hyperband is not None:
            band = tuning.hyperband
            matrix = {
                "kind": "hyperband",
                "maxIterations": band.max_iter,
                "eta": _number(band.eta),
                "resource": {"name": band.resource.name, "type": band.resource.type},
                "metric": {"name": band.metric.name, "optimization": band.metric.optimization},
            }
            if band.resume is not None:
                matrix["resume"] = band.resume
            if tuning.seed is not None:
                matrix["seed"] = tuning.seed
        elif tuning.bo is not None:
            matrix = self._bayes(tuning, path)
        else:
            matrix = {"kind": "grid"}
            if tuning.grid_search is not None and tuning.grid_search.n_experiments is not None:
                matrix["numRuns"] = tuning.grid_search.n_experiments
            if tuning.seed is not None:
                self.note((*path, "seed"), "grid search is deterministic; dropped")
        # legacy ran one experiment at a time unless told otherwise; v1.1 defaults to unlimited
        matrix["concurrency"] = tuning.concurrency if tuning.concurrency is not None else 1
        matrix["params"] = params
        stopping = [
            self._early_stopping(item, (*path, "early_stopping", index))
            for index, item in enumerate(tuning.early_stopping or [])
        ]
        if stopping:
            matrix["earlyStopping"] = stopping
        return matrix

    def _bayes(self, tuning: HPTuning, path: Path) -> dict[str, Any]:
        bo = tuning.bo
        assert bo is not None
        matrix: dict[str, Any] = {
            "kind": "bayes",
            "numInitialRuns": bo.n_initial_trials,
            "maxIterations": bo.n_iterations,
            "metric": {"name": bo.metric.name, "optimization": bo.metric.optimization},
        }
        function = bo.utility_function
        if function is not None:
            utility: dict[str, Any] = {
                "acquisitionFunction": function.acquisition_function or "ucb"
            }
            process = function.gaussian_process
            if process is not None:
                gp: dict[str, Any] = {}
                for legacy, modern in (
                    ("kernel", "kernel"),
                    ("length_scale", "lengthScale"),
                    ("nu", "nu"),
                    ("n_restarts_optimizer", "numRestartsOptimizer"),
                ):
                    value = getattr(process, legacy)
                    if value is not None:
                        gp[modern] = value
                utility["gaussianProcess"] = gp
            for legacy, modern in (
                ("kappa", "kappa"),
                ("eps", "eps"),
                ("n_warmup", "numWarmup"),
                ("n_iter", "numIterations"),
            ):
                value = getattr(function, legacy)
                if value is not None:
                    utility[modern] = value
            matrix["utilityFunction"] = utility
        if tuning.seed is not None:
            matrix["seed"] = tuning.seed
        return matrix

    def _hp(self, entry: MatrixEntry, path: Path) -> dict[str, Any]:
        key, value = entry.key, entry.value
        if key == "values":
            return {"kind": "choice", "value": list(value)}
        if key == "pvalues":
            return self._pchoice(value, (*path, "pvalues"))
        if key == "range" and isinstance(value, list) and len(value) > 3:
            self.note(
                (*path, "range"),
                f"a range is [start, stop, step], but {len(value)} "
                "numbers were given; read as a list of values (`choice`)",
            )
            return {"kind": "choice", "value": list(value)}
        if isinstance(value, dict):
            value = dict(value)
        return {"kind": key, "value": value}

    def _pchoice(self, value: list[list[Any]], path: Path) -> dict[str, Any]:
        """v1.1 wants probabilities that sum to 1; legacy sampled with numpy's multinomial,
        which gives any missing mass to the last value, so that is where it goes."""
        items = [list(item) for item in value]
        if len(items) == 1:
            self.note(path, "a single value is certain: written as a `choice`")
            return {"kind": "choice", "value": [items[0][0]]}
        total = math.fsum(item[1] for item in items)
        if total < 1 - 1e-9:
            last = round(1 - math.fsum(item[1] for item in items[:-1]), 12)
            self.note(
                path,
                f"probabilities summed to {total:g}; the missing {1 - total:g} goes to the last "
                f"value, {items[-1][0]!r}, as legacy sampling did",
            )
            items[-1][1] = last
        return {"kind": "pchoice", "value": items}

    def _early_stopping(self, item: EarlyStopping, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "metric_early_stopping",
            "metric": item.metric,
            "value": _number(item.value) if item.value is not None else None,
            "optimization": item.optimization,
        }
        policy = item.policy
        if policy is None:
            return out
        if policy.kind == "average":
            self.note(
                (*path, "policy"),
                "the `average` stopping policy has no v1.1 equivalent; "
                "dropped (the metric threshold is kept)",
            )
        elif policy.kind == "median":
            out["policy"] = {"kind": "median", "evaluationInterval": policy.evaluation_interval}
        else:
            out["policy"] = {
                "kind": "truncation",
                "percent": _number(policy.percent),
                "evaluationInterval": policy.evaluation_interval,
            }
        return out

    def _add_matrix_inputs(self, component: dict[str, Any], tuning: HPTuning, path: Path) -> None:
        """Declare every matrix key as an input, so each trial's value is a valid param."""
        inputs: list[dict[str, Any]] = list(component.get("inputs") or [])
        by_name = {io["name"]: io for io in inputs}
        wanted: dict[str, str | None] = {
            name: _hp_type(entry) for name, entry in (tuning.matrix or {}).items()
        }
        if tuning.hyperband is not None:
            resource = tuning.hyperband.resource
            wanted.setdefault(resource.name, resource.type)
        for name, hp_type in wanted.items():
            if name not in by_name:
                io = {"name": name}
                if hp_type is not None:
                    io["type"] = hp_type
                inputs.append(io)
                continue
            io = by_name[name]
            declared = io.get("type")
            if {declared, hp_type} == {"int", "float"}:
                io["type"] = "float"
            elif hp_type is not None and declared not in (None, hp_type):
                self.note(
                    (*path, "matrix", name),
                    f"declared as `{declared}` but the matrix "
                    f"gives `{hp_type}` values; the input type was dropped",
                )
                io.pop("type", None)
        if inputs:
            rest = {k: v for k, v in component.items() if k != "inputs"}
            component.clear()
            component.update({"inputs": inputs, **rest})


def _hp_type(entry: MatrixEntry) -> str | None:
    key, value = entry.key, entry.value
    if key == "values":
        return _common_type(value)
    if key == "pvalues":
        return _common_type([item[0] for item in value])
    if key == "range":
        if isinstance(value, list) and len(value) > 3:
            return _common_type(value)
        numbers = space_items("range", value)
        return "int" if all(isinstance(v, int) for v in numbers.values()) else "float"
    if key in DISTRIBUTION_KEYS or key in ("linspace", "logspace", "geomspace"):
        return "float"
    return None


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
