"""Turn a validated ``kind: job`` operation into a local process run, and run it.

Two steps with a clean boundary, so the flow layer, DAG ops and matrix trials can all reuse them:

* `prepare_job` does everything that can fail *before* anything runs: it merges params, renders
  ``command``/``args``/``env``/``workingDir``/``init`` with params, ``globals`` and connections,
  resolves connections and their secrets, and computes the cache key. Every template error is
  reported at once, located at its field.
* `execute_job` runs the init steps and the process (no shell: each argv element reaches the
  program as one argument, so a param value like ``"; touch pwned"`` stays a literal), then reads
  back the outputs and metrics the process logged and checks them against the declared outputs.

Nothing here imports Prefect: retries, caching and state names are the flow layer's job.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem, UnsupportedFeatureError
from polyaxon_prefect.loading import (
    ParamValue,
    TemplateError,
    as_str,
    build_context,
    evaluate_expression,
    read_literal,
    render_bool,
    render_text,
    render_value,
)
from polyaxon_prefect.runtime._connections import (
    Connection,
    connection_env_prefix,
    connections_env,
    get_connection,
    load_connections,
)
from polyaxon_prefect.runtime._context import (
    DEFAULT_PROJECT,
    RunContext,
    new_run_context,
    project_uuid,
)
from polyaxon_prefect.runtime._errors import OutputsError, ProcessStartError
from polyaxon_prefect.runtime._masking import (
    mask_text,
    mask_value,
    redact_url_credentials,
    remember_secrets,
    url_credentials,
)
from polyaxon_prefect.runtime._outputs import read_metrics, read_outputs, validate_outputs
from polyaxon_prefect.runtime._process import ProcessResult, run_process
from polyaxon_prefect.specs._validate_params import unexpected_param
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.loading._load import LoadedPolyaxonfile

LOG_FILE = "job.log"
"""The whole output of a run's processes (masked), under ``<run>/logs/``."""

__all__ = [
    "DEFAULT_PROJECT",
    "BuildNotSupportedError",
    "InitStep",
    "JobResult",
    "PreparedJob",
    "execute_job",
    "prepare_job",
    "render_dockerfile",
]

_PYTHON_NAMES = frozenset({"python", "python3"})
_CONTEXT_ROOT = "/plx-context"  # Polyaxon's in-container context path, mapped to the run's
_STDERR_LINES_IN_MESSAGE = 5
_KANIKO_NAMES = ("kaniko",)
_CACHE_SECTIONS = ("init", "connections", "containers")
_OCTAL_MODE = re.compile(r"^(?:0o?)?[0-7]{3,4}$")
PathT = tuple[str | int, ...]


class BuildNotSupportedError(UnsupportedFeatureError):
    """A build operation on the local runtime, which has no image builder."""


# --------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class InitStep:
    """One rendered ``init`` entry, ready to run before the main process.

    ``kind`` is the source (``git``, ``file``, ``paths``, ``artifacts``, ``dockerfile``,
    ``container``) or ``connection`` for a bare connection (its env is already in the job's env).
    ``spec`` is the rendered source value (a spec model, or a list for ``paths``); ``dest`` is
    the directory the step writes into.
    """

    index: int
    kind: str
    spec: Any
    dest: Path
    connection: str | None = None
    argv: tuple[str, ...] = ()
    explicit_dest: bool = False
    """``dest`` is an absolute ``path`` the user named (it may lie outside the run's context)."""

    def describe(self) -> str:
        url = getattr(self.spec, "url", None)
        what = {
            "git": lambda: f"git clone of {redact_url_credentials(url or '') or self.connection}",
            "file": lambda: f"file {getattr(self.spec, 'filename', None) or 'file'}",
            "dockerfile": lambda: "dockerfile",
            "paths": lambda: "paths copy",
            "artifacts": lambda: "artifacts copy",
            "container": lambda: f"init container `{' '.join(self.argv)[:80]}`",
            "connection": lambda: f"connection {self.connection}",
        }.get(self.kind, lambda: self.kind)()
        return f"init[{self.index}] ({what})"


@dataclass(frozen=True)
class PreparedJob:
    """Everything needed to run one job locally; built by `prepare_job`, run by `execute_job`."""

    op_name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    image: str | None
    secrets: tuple[str, ...]
    timeout: float | None
    max_retries: int
    ttl: int | None
    cache_key: str | None
    cache_ttl: int | None
    params: dict[str, Any]
    outputs: list[Any]
    context: RunContext
    is_build: bool = False
    tags: tuple[str, ...] = ()
    init: tuple[InitStep, ...] = ()
    base_dir: Path | None = None
    notes: tuple[str, ...] = ()
    """Things the user should know that are not errors (e.g. "the build was skipped")."""


@dataclass(frozen=True)
class JobResult:
    """How a job ended, in Polyaxon's status words (succeeded, failed, stopped, skipped)."""

    status: str
    outputs: dict[str, Any]
    metrics: dict[str, Any]
    message: str
    process: ProcessResult | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


# --------------------------------------------------------------------------------------------------
# prepare_job


class _Problems:
    """Collects problems so that every one of them is reported at once."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, message: str, rule: str, path: PathT, hint: str | None = None) -> None:
        self.items.append(Problem(message, rule=rule, path=path, hint=hint))

    def template(self, exc: TemplateError, prefix: PathT) -> None:
        self.items.append(exc.problem(prefix))


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _base_dir(loaded: Any, base_dir: Path | None) -> Path:
    if base_dir is not None:
        return Path(base_dir).absolute()
    files = getattr(loaded, "files", ()) or ()
    if files and not str(files[0]).startswith(("http://", "https://")):
        return Path(files[0]).absolute().parent
    return Path.cwd()


def _merge_params(
    component: Any, operation: Any, loaded_params: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """Loaded (typed) values, overridden by ``overrides`` parsed by each input's type."""
    values = dict(loaded_params)
    problems = _Problems()
    op_params = operation.params or {}
    for name, value in overrides.items():
        io = component.get_io(name)
        if io is None:
            if name in op_params and op_params[name].is_context_only:
                values[name] = value
                continue
            declared = ", ".join(f"`{io.name}`" for io in component.ios) or "none"
            problems.items.append(unexpected_param(name, declared))
            continue
        try:
            values[name] = io.validate_value(value)
        except ValueError as exc:
            problems.add(f"param `{name}`: {exc}", "param_type", ("params", name, "value"))
    for io in component.inputs or []:
        if values.get(io.name) is None and io.is_optional is not True:
            problems.add(
                f"input `{io.name}` is required but has no value",
                "param_required",
                ("params", io.name),
                hint=f"pass it with `-P {io.name}=...`, or give the input a default `value`",
            )
    if problems.items:
        raise PolyaxonfileError(problems.items)
    return values


def _param_values(
    component: Any, operation: Any, values: Mapping[str, Any]
) -> dict[str, ParamValue]:
    op_params = operation.params or {}
    out: dict[str, ParamValue] = {}
    outputs = {io.name for io in component.outputs or []}
    for io in component.ios:
        if io.name not in values or (io.name in outputs and values[io.name] is None):
            continue
        param = op_params.get(io.name)
        out[io.name] = ParamValue(
            value=values[io.name],
            type=io.type,
            is_flag=io.is_flag is True,
            arg_format=io.arg_format,
            connection=_first(getattr(param, "connection", None), io.connection),
        )
    for name, value in values.items():
        if name not in out and component.get_io(name) is None:
            out[name] = ParamValue(
                value=value, connection=getattr(op_params.get(name), "connection", None)
            )
    return out


def _written_templates(component: Any, operation: Any, given: frozenset[str]) -> dict[str, Any]:
    """The param values written as templates in the Polyaxonfile, by name: a literal param's
    value or an input's default (``{{ globals.run_outputs_path }}/model``).

    Only these are rendered. A value given by the caller (``-P``), read by a ref, produced by
    an upstream op or suggested by a sweep is data: ``{{`` in it arrives as written.
    """
    op_params = operation.params or {}
    written: dict[str, Any] = {}
    for io in component.ios:
        param = op_params.get(io.name)
        if param is None:
            value = io.value
        elif param.is_ref or io.name in given:
            continue
        else:
            value = param.value
        if _has_template(value):
            written[io.name] = value
    for name, param in op_params.items():
        if name in written or component.get_io(name) is not None or name in given:
            continue
        if not param.is_ref and _has_template(param.value):
            written[name] = param.value
    return written


def _render_params(
    params: dict[str, ParamValue],
    values: dict[str, Any],
    globals_: dict[str, Any],
    written: Mapping[str, Any],
) -> set[str]:
    """Render the param values written as templates (`_written_templates`) that are still the
    ones in use (an override replaces them with data); return the names rendered."""
    templated = [
        name
        for name, param in params.items()
        if name in written and _has_template(param.value) and param.value == written[name]
    ]
    if not templated:
        return set()
    context = build_context(params, globals=globals_)
    problems = _Problems()
    for name in templated:
        try:
            rendered = render_value(params[name].value, context)
        except TemplateError as exc:
            problems.template(exc, ("params", name, "value"))
            continue
        values[name] = rendered
        param = params[name]
        params[name] = ParamValue(
            rendered, param.type, param.is_flag, param.arg_format, param.connection
        )
    if problems.items:
        raise PolyaxonfileError(problems.items)
    return set(templated)


def _check_data_values(
    component: Any, params: Mapping[str, ParamValue], rendered: set[str]
) -> None:
    """Type the values that hold ``{{`` but are data (not rendered): typing skipped them as
    "rendered later", and a ``{{ 7*7 }}`` given for an ``int`` input is no integer."""
    from polyaxon_prefect.specs._io import check_validation
    from polyaxon_prefect.specs._types import parse_value

    problems = _Problems()
    for name, param in params.items():
        io = component.get_io(name)
        if name in rendered or io is None or not io.type or not _has_template(param.value):
            continue
        try:
            parsed = parse_value(io.type, param.value, is_list=io.is_list is True)
            errors = check_validation(io.effective_validation, parsed)
        except ValueError as exc:
            errors = [str(exc)]
        if errors:
            problems.add(
                f"param `{name}`: " + "; ".join(errors),
                "param_type",
                ("params", name, "value"),
                hint="a value given with -P, read by a ref or produced by an op is data: "
                "`{{ }}` in it is not rendered",
            )
    if problems.items:
        raise PolyaxonfileError(problems.items)


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _render_text_value(value: Any, context: Mapping[str, Any]) -> str:
    """A string field rendered as text (what the user's template printed), not literal-typed."""
    if not isinstance(value, str):
        return as_str(value)
    if not _has_template(value):
        return value
    return render_text(value, context)


_SINGLE_EXPRESSION = re.compile(
    r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}|\{%|%\}|\{#).)*)\}\}\s*$", re.DOTALL
)


_TEXT = object()  # `_expression_value`: the template is not a single expression


def _expression_value(template: str, context: Mapping[str, Any]) -> Any:
    """The value (not the text) of a template that is one ``{{ expression }}``, else `_TEXT`.

    Only called after the template rendered as text, so it cannot fail in a new way; if it
    does anyway, the text is what counts.
    """
    match = _SINGLE_EXPRESSION.match(template)
    if match is None:
        return _TEXT
    try:
        return evaluate_expression(match["expr"], context)
    except Exception:
        return _TEXT


def _as_args(value: list[Any]) -> list[str]:
    return [item if isinstance(item, str) else as_str(item) for item in value]


def _render_argv(
    items: Any, context: Mapping[str, Any], path: PathT, problems: _Problems
) -> list[str]:
    """Render ``command``/``args``: each element one argument, whatever its value holds.

    A list becomes several arguments only where it is one: an element that is a single
    ``{{ expression }}`` whose value is a list (``{{ params.as_args }}``, a list-typed input),
    or a template standing for the whole list (``args: "['-v', '{{ x }}']"``). Text that only
    *looks* like a list (a ``str`` param given as ``"['--evil', 'x']"``) stays one argument:
    rendered text is never read back as a list of arguments.
    """
    if items is None:
        return []
    if isinstance(items, str):  # a template for the whole list: `args: "{{ params.as_args }}"`
        try:
            text = render_text(items, context)
        except TemplateError as exc:
            problems.template(exc, path)
            return []
        value = read_literal(text)
        if isinstance(value, list):
            native = _expression_value(items, context)
            if native is _TEXT or isinstance(native, list | tuple):
                return _as_args(value if native is _TEXT else list(native))
        return [text] if text.strip() else []
    argv: list[str] = []
    for index, item in enumerate(items):
        if not _has_template(item):
            argv.append(item if isinstance(item, str) else as_str(item))
            continue
        try:
            text = render_text(item, context)
        except TemplateError as exc:
            problems.template(exc, (*path, index))
            continue
        native = _expression_value(item, context) if isinstance(read_literal(text), list) else None
        if isinstance(native, list | tuple):
            argv.extend(_as_args(list(native)))
        else:
            argv.append(text)
    return argv


def _render_model(
    value: Any, model: type, context: Mapping[str, Any], path: PathT, problems: _Problems
) -> Any:
    """Render a (possibly templated) section and validate it back into ``model``."""
    if value is None:
        return None
    data = value.to_dict() if hasattr(value, "to_dict") else value
    if not _has_template(data):
        return value if isinstance(value, model) else model.model_validate(data)
    try:
        rendered = render_value(data, context)
    except TemplateError as exc:
        problems.template(exc, path)
        return None
    try:
        return model.model_validate(rendered)
    except ValueError as exc:
        problems.add(f"after rendering, the section is invalid: {exc}", "rendered_invalid", path)
        return None


def _render_scalar(
    value: Any, context: Mapping[str, Any], path: PathT, problems: _Problems, kind: type
) -> Any:
    if value is None or not _has_template(value):
        return value
    try:
        rendered = render_value(value, context)
    except TemplateError as exc:
        problems.template(exc, path)
        return None
    if kind is int and (isinstance(rendered, bool) or not isinstance(rendered, int)):
        problems.add(
            f"`{value}` rendered to {rendered!r}, expected an integer", "rendered_type", path
        )
        return None
    return rendered


def _as_path(value: str, context: RunContext, base: Path) -> Path:
    """A path from the Polyaxonfile: ``/plx-context/...`` maps into the run's context directory,
    a relative path is relative to ``base``."""
    if value == _CONTEXT_ROOT or value.startswith(_CONTEXT_ROOT + "/"):
        return context.context_path / value[len(_CONTEXT_ROOT) :].lstrip("/")
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _connection_names(run: Any, init: Sequence[Any], params: Mapping[str, ParamValue]) -> list[str]:
    names: list[str] = []
    for name in run.connections or []:
        names.append(name)
    for entry in init:
        if getattr(entry, "connection", None):
            names.append(entry.connection)
    for param in params.values():
        if param.connection:
            names.append(param.connection)
    return list(dict.fromkeys(names))


def _to_init_entries(component: Any, operation: Any, values: Mapping[str, Any]) -> list[Any]:
    """Params with ``toInit`` become init entries, prepended to ``run.init`` (Polyaxon's rule)."""
    from polyaxon_prefect.specs._init import Init

    entries: list[Any] = []
    problems = _Problems()
    op_params = operation.params or {}
    for io in component.inputs or []:
        param = op_params.get(io.name)
        to_init = _first(getattr(param, "to_init", None), io.to_init)
        if to_init is not True or values.get(io.name) is None:
            continue
        value = values[io.name]
        data = value.to_dict() if hasattr(value, "to_dict") else value
        connection = _first(getattr(param, "connection", None), io.connection)
        if io.type in ("git", "dockerfile", "artifacts"):
            entry: dict[str, Any] = {io.type: data}
        elif io.type == "path":
            entry = {"paths": data if isinstance(data, list) else [data]}
        elif connection:
            entry = {}
        else:
            problems.add(
                f"param `{io.name}` of type `{io.type}` cannot be turned into an init step",
                "to_init",
                ("params", io.name, "toInit"),
                hint="only git, dockerfile, artifacts and path params, or params with a "
                "`connection`, can use `toInit`",
            )
            continue
        if connection:
            entry["connection"] = connection
        entries.append(Init.model_validate(entry))
    if problems.items:
        raise PolyaxonfileError(problems.items)
    return entries


def _init_steps(
    entries: Sequence[Any],
    context_: Mapping[str, Any],
    run_context: RunContext,
    problems: _Problems,
    path: PathT,
    offset: int,
) -> list[InitStep]:
    """Render the init entries (``toInit`` ones first, located at ``params``)."""
    from polyaxon_prefect.specs._init import Init
    from polyaxon_prefect.specs._k8s import Container

    steps: list[InitStep] = []
    for index, raw in enumerate(entries):
        where = (*path, index - offset) if index >= offset else ("params",)
        data = raw.to_dict() if hasattr(raw, "to_dict") else raw
        # A custom container's command/args are rendered as argv below, not as literals.
        raw_container = data.pop("container", None) if isinstance(data, dict) else None
        entry = _render_model(data, Init, context_, where, problems)
        if entry is None:
            continue
        if isinstance(raw_container, str):
            entry = entry.model_copy(
                update={
                    "container": _render_model(
                        raw_container, Container, context_, (*where, "container"), problems
                    )
                }
            )
        elif raw_container is not None:
            entry = entry.model_copy(update={"container": Container.model_validate(raw_container)})
        dest = (
            _as_path(entry.path, run_context, run_context.artifacts_path)
            if entry.path
            else run_context.artifacts_path
        )
        explicit = _is_explicit(entry.path)
        source = entry.source
        if source in ("tensorboard", "lineage_ref", "model_ref", "artifact_ref"):
            problems.add(
                f"init `{source}` needs a Polyaxon server and cannot run locally",
                "unsupported_init",
                (*where, source),
                hint="fetch the files with a `paths` or `git` init step instead",
            )
            continue
        if source is None and entry.container is not None:
            container = entry.container
            argv = _render_argv(
                container.command, context_, (*where, "container", "command"), problems
            )
            argv += _render_argv(container.args, context_, (*where, "container", "args"), problems)
            if not argv:
                problems.add(
                    "an init container needs a `command`", "init_container", (*where, "container")
                )
                continue
            steps.append(
                InitStep(
                    index,
                    "container",
                    container,
                    dest,
                    entry.connection,
                    tuple(_python(argv)),
                    explicit_dest=explicit,
                )
            )
            continue
        if source is None:
            steps.append(InitStep(index, "connection", None, dest, entry.connection))
            continue
        steps.append(
            InitStep(
                index,
                source,
                getattr(entry, source),
                dest,
                entry.connection,
                explicit_dest=explicit,
            )
        )
    return steps


def _python(argv: list[str]) -> list[str]:
    """``python``/``python3`` run with the interpreter that runs polyaxon-prefect.

    The job should see the same environment (packages, ``polyaxon_prefect.tracking`` included)
    as the runtime that launched it, whatever ``python`` happens to mean on ``PATH`` (a system
    Python, another virtualenv). A user who wants another interpreter gives its path.
    """
    if argv and argv[0] in _PYTHON_NAMES:
        return [sys.executable, *argv[1:]]
    return argv


def _is_build_op(operation: Any, component: Any, steps: Sequence[InitStep]) -> bool:
    """A kaniko hub component, or a dockerfile init step in a component with a ``destination``."""
    hub_ref = (operation.hub_ref or "").split(":")[0].split("/")[-1]
    if hub_ref in _KANIKO_NAMES or (component.name or "").split(":")[0] in _KANIKO_NAMES:
        return True
    has_destination = component.get_io("destination") is not None
    return has_destination and any(step.kind == "dockerfile" for step in steps)


def _cache_key(
    *,
    component: Any,
    cache: Any,
    values: Mapping[str, Any],
    run: Any,
    connection_names: Sequence[str],
    context: RunContext,
) -> str:
    """Polyaxon's cache state: the component, its inputs (``cache.io`` only, when given), outputs
    and context values that are set, and the run sections (``cache.sections``, default all three).

    Sections use the *unrendered* spec, as Polyaxon hashes the operation before rendering the
    run: otherwise an arg like ``--dropout={{ dropout }}`` would make ``cache.io`` useless.
    """
    io_filter = set(cache.io) if cache is not None and cache.io else None
    input_names = [io.name for io in component.inputs or []]
    output_names = [io.name for io in component.outputs or []]
    inputs = {
        name: values.get(name)
        for name in sorted(input_names)
        if io_filter is None or name in io_filter
    }
    outputs = {name: values[name] for name in sorted(output_names) if values.get(name) is not None}
    contexts = {
        name: value
        for name, value in sorted(values.items())
        if name not in input_names and name not in output_names
    }
    sections = (cache.sections if cache is not None and cache.sections else None) or _CACHE_SECTIONS
    state: dict[str, Any] = {
        "project": project_uuid(context.owner_name, context.project_name),
        "component": component.to_dict(),
        "in": inputs,
        "out": outputs,
        "ctx": contexts,
    }
    if "init" in sections:
        state["init"] = run.to_dict().get("init")
    if "connections" in sections:
        state["connections"] = sorted(connection_names)
    if "containers" in sections:
        container = run.to_dict().get("container") or {}
        state["containers"] = {
            key: container.get(key) for key in ("image", "command", "args") if key in container
        }
    text = json.dumps(state, sort_keys=True, default=_json_default, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def _cache_enabled(
    cache: Any, in_pipeline: bool, context: Mapping[str, Any], problems: _Problems
) -> bool:
    disable = getattr(cache, "disable", None)
    if isinstance(disable, str):
        try:
            disable = render_bool(disable, context)
        except TemplateError as exc:
            problems.template(exc, ("component", "cache", "disable"))
            return False
    if in_pipeline:
        return disable is not True
    return disable is False


def _locate(problems: list[Problem], loaded: Any) -> list[Problem]:
    """Best effort: put the main file's line on ``component.*`` problems.

    The path stays relative to the operation (``component.run.container.args[2]``), which is
    what the problem is about whichever file the component came from; the line is only found
    when the component is written in the main file.
    """
    files = getattr(loaded, "files", ()) or ()
    if not files:
        return problems
    try:
        from polyaxon_prefect.loading._yaml import parse_yaml

        doc = parse_yaml(Path(files[0]).read_text(encoding="utf-8"), file=str(files[0]))
    except (OSError, PolyaxonfileError, UnicodeDecodeError):
        return problems
    data = doc.data if isinstance(doc.data, dict) else {}
    located: list[Problem] = []
    for problem in problems:
        path = problem.path
        if data.get("kind") == "component" and path[:1] == ("component",):
            source_path: PathT | None = path[1:]
        elif data.get("kind") == "operation" and (
            path[:1] != ("component",) or isinstance(data.get("component"), dict)
        ):
            source_path = path
        else:
            source_path = None
        if source_path is None:
            located.append(problem)
            continue
        line, column = doc.positions.find(source_path)
        located.append(problem.located(file=str(files[0]), line=line, column=column))
    return located


def _with_url_credentials(secrets: tuple[str, ...], *values: Any) -> tuple[str, ...]:
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if "://" in value and "@" in value:
                found.extend(url_credentials(value))
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(values)
    return tuple(dict.fromkeys([*secrets, *found]))


def prepare_job(
    loaded: LoadedPolyaxonfile,
    *,
    run_context: RunContext | None = None,
    params: Mapping[str, Any] | None = None,
    connections: Mapping[str, Connection] | None = None,
    in_pipeline: bool = False,
    skip_builds: bool = False,
    base_dir: Path | None = None,
) -> PreparedJob:
    """Resolve a loaded job operation into argv, env, cwd, init steps and run settings.

    Args:
        loaded: a `LoadedPolyaxonfile` (operation with its component inlined, typed params).
        run_context: the run's identity and directories; a new one (project from
            ``POLYAXON_PREFECT_PROJECT``, else ``default``) is created when omitted.
        params: overrides: typed values, or strings parsed by the input's declared type.
        connections: the connections by name; default: `load_connections()` (env var file).
        in_pipeline: the op runs inside a DAG/matrix, which turns the cache on by default.
        skip_builds: prepare build ops as skipped instead of raising `BuildNotSupportedError`.
        base_dir: the Polyaxonfile's folder (default: the folder of ``loaded.files[0]``).

    Raises:
        PolyaxonfileError: bad or missing params, template errors (every one, located).
        UnsupportedFeatureError: a run kind or init source that cannot run locally.
        BuildNotSupportedError: a build op without ``skip_builds``.
        UnknownConnectionError: a connection name the connections file does not define.
        ConnectionsError: a connection's local secret/config map is missing.
    """
    from polyaxon_prefect.specs._cache import Cache
    from polyaxon_prefect.specs._k8s import Container
    from polyaxon_prefect.specs._termination import Termination

    operation = loaded.operation
    component = operation.component
    if component is None:
        raise PolyaxonfileError(
            [Problem("the operation has no component to run", rule="no_component")]
        )
    run = component.run
    kind = getattr(run, "kind", None)
    if kind != "job":
        hint = {
            "dag": "a dag runs as a pipeline: use the pipeline runner, not a single job",
            "service": "a service is a long-running server; run its command yourself, or set "
            "`kind: job` if it terminates",
        }.get(kind or "", "distributed kinds need a cluster; use `kind: job` to run locally")
        raise UnsupportedFeatureError(
            [
                Problem(
                    f"run kind `{kind}` cannot run on the local runtime, only `job` can",
                    rule="unsupported_kind",
                    path=("component", "run", "kind"),
                    hint=hint,
                )
            ]
        )

    base = _base_dir(loaded, base_dir)
    op_name = operation.name or component.name or "job"
    values = _merge_params(component, operation, getattr(loaded, "params", {}) or {}, params or {})
    if run_context is None:  # directories are made by execute_job, not for a failed prepare
        run_context = new_run_context(op_name)
    globals_ = run_context.globals_dict()
    param_values = _param_values(component, operation, values)
    written = _written_templates(component, operation, getattr(loaded, "given_params", frozenset()))
    rendered = _render_params(param_values, values, globals_, written)
    _check_data_values(component, param_values, rendered)

    problems = _Problems()
    base_context = build_context(param_values, globals=globals_)

    # init entries (templated list or list) and the connections they name
    raw_init = run.init or []
    if isinstance(raw_init, str):
        try:
            raw_init = render_value(raw_init, base_context)
        except TemplateError as exc:
            problems.template(exc, ("component", "run", "init"))
            raw_init = []
        if not isinstance(raw_init, list):
            problems.add(
                f"`init` must render to a list, got {raw_init!r}",
                "rendered_type",
                ("component", "run", "init"),
            )
            raw_init = []
    to_init = _to_init_entries(component, operation, values)
    conn_run = run
    if isinstance(run.connections, str):
        names = _render_scalar(
            run.connections, base_context, ("component", "run", "connections"), problems, list
        )
        conn_run = run.model_copy(update={"connections": names if isinstance(names, list) else []})
    elif isinstance(run.connections, list) and any(_has_template(c) for c in run.connections):
        # one entry per template, as Polyaxon's hub kaniko writes `["{{ destination.connection }}"]`
        rendered = [
            _render_scalar(c, base_context, ("component", "run", "connections", i), problems, str)
            for i, c in enumerate(run.connections)
        ]
        kept = [str(name) for name in rendered if name not in (None, "", "None")]
        conn_run = run.model_copy(update={"connections": kept})
    init_entries = [*to_init, *raw_init]
    connection_names = _connection_names(
        conn_run, [e for e in init_entries if not isinstance(e, str)], param_values
    )
    if connections is None:
        connections = load_connections()
    used = [get_connection(connections, name) for name in connection_names]
    conn_env, secret_values = connections_env(used)
    secrets = tuple(dict.fromkeys(secret_values))
    context = build_context(
        param_values,
        globals=globals_,
        connections={conn.name: dict(conn.schema_ or {}) for conn in used},
    )

    # the main container
    container_path: PathT = ("component", "run", "container")
    # Only a whole-section template is rendered here; command, args, env and workingDir are
    # rendered field by field below, as text, so their arguments keep the user's spelling.
    container = run.container
    if isinstance(container, str):
        container = _render_model(container, Container, context, container_path, problems)
    argv: list[str] = []
    env_items: dict[str, str] = {}
    cwd = base
    image: str | None = None
    if container is None and run.container is None:
        problems.add("a job needs a `container` with a `command`", "no_container", container_path)
    elif container is not None:
        argv = _render_argv(container.command, context, (*container_path, "command"), problems)
        argv += _render_argv(container.args, context, (*container_path, "args"), problems)
        if not argv and not problems.items:
            problems.add(
                "the container has no `command`; locally there is no image entrypoint to fall "
                "back on",
                "no_command",
                (*container_path, "command"),
                hint="set `command:`, e.g. `command: [python, train.py]`",
            )
        for index, var in enumerate(container.env or []):
            where = (*container_path, "env", index)
            if var.value_from is not None:
                problems.add(
                    f"env var `{var.name}` uses `valueFrom`, which has no local meaning",
                    "env_value_from",
                    (*where, "valueFrom"),
                    hint="use a literal `value`, or a connection whose secret provides it",
                )
                continue
            try:
                env_items[var.name] = _render_text_value(var.value or "", context)
            except TemplateError as exc:
                problems.template(exc, (*where, "value"))
        if container.working_dir:
            try:
                cwd = _as_path(
                    _render_text_value(container.working_dir, context), run_context, base
                )
            except TemplateError as exc:
                problems.template(exc, (*container_path, "workingDir"))
        if container.image:
            try:
                image = _render_text_value(container.image, context)
            except TemplateError as exc:
                problems.template(exc, (*container_path, "image"))

    steps = _init_steps(
        init_entries,
        context,
        run_context,
        problems,
        ("component", "run", "init"),
        len(to_init),
    )

    termination = _render_model(
        _first(operation.termination, component.termination),
        Termination,
        context,
        ("component", "termination"),
        problems,
    )
    cache = _render_model(
        _first(operation.cache, component.cache), Cache, context, ("component", "cache"), problems
    )
    tags_raw = _first(operation.tags, component.tags) or []
    if isinstance(tags_raw, str):
        tags_raw = _render_scalar(tags_raw, context, ("component", "tags"), problems, list) or []
    cache_on = _cache_enabled(cache, in_pipeline, context, problems)
    if problems.items:
        raise PolyaxonfileError(_locate(problems.items, loaded))

    notes: list[str] = []
    is_build = _is_build_op(operation, component, steps)
    build = _first(operation.build, component.build)
    if is_build or build is not None:
        what = (
            f"the op needs an image built by `{getattr(build, 'hub_ref', build)}` first"
            if not is_build
            else f"`{op_name}` is an image build"
        )
        if not skip_builds:
            raise BuildNotSupportedError(
                [
                    Problem(
                        f"{what}, and the local runtime has no image builder",
                        rule="build_unsupported",
                        path=("component", "build") if not is_build else ("component", "run"),
                        hint="skip builds with `--skip-builds` (`skip_builds=True`); the job then "
                        "runs with the commands on this machine, whatever the image",
                    )
                ]
            )
        if not is_build:
            notes.append(f"build skipped: {what}; running the job locally without it")

    env = dict(os.environ)
    set_values = _set_values(component, values)
    env.update(run_context.env_vars(_jsonable_params(set_values)))
    env.update(env_items)
    op_params = operation.params or {}
    for name, value in values.items():
        io = component.get_io(name)
        to_env = _first(getattr(op_params.get(name), "to_env", None), getattr(io, "to_env", None))
        if to_env and value is not None:
            env[to_env] = as_str(value.to_dict() if hasattr(value, "to_dict") else value)
    env.update(conn_env)
    # Credentials written into a URL (a git init step's, a connection's, a param's) are
    # secrets too: masked wherever they appear, in this job's lines and in this process.
    secrets = _with_url_credentials(
        secrets,
        [getattr(step.spec, "url", None) for step in steps if step.kind == "git"],
        [dict(conn.schema_ or {}) for conn in used],
        _jsonable_params(values),
    )
    remember_secrets(secrets)

    timeout = getattr(termination, "timeout", None)
    max_retries = getattr(termination, "max_retries", None)
    cache_key = (
        _cache_key(
            component=component,
            cache=cache,
            values=values,
            run=conn_run,
            connection_names=connection_names,
            context=run_context,
        )
        if cache_on
        else None
    )
    return PreparedJob(
        op_name=op_name,
        argv=_python(argv),
        env=env,
        cwd=cwd,
        image=image,
        secrets=secrets,
        timeout=float(timeout) if timeout is not None else None,
        max_retries=int(max_retries or 0),
        ttl=getattr(termination, "ttl", None),
        cache_key=cache_key,
        cache_ttl=getattr(cache, "ttl", None) if cache_on else None,
        params=mask_value(_jsonable_params(set_values), secrets),
        outputs=list(component.outputs or []),
        context=run_context,
        is_build=is_build,
        tags=tuple(str(tag) for tag in tags_raw),
        init=tuple(steps),
        base_dir=base,
        notes=tuple(notes),
    )


def _set_values(component: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every input and context value, and the outputs that have a value (as Polyaxon passes)."""
    outputs = {io.name for io in component.outputs or []}
    return {k: v for k, v in values.items() if k not in outputs or v is not None}


def _jsonable_params(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in values.items()}


# --------------------------------------------------------------------------------------------------
# init steps


class _InitError(Exception):
    """An init step failed; the message names the step and the cause."""


def _is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _writable_target(target: Path, ctx: RunContext, *, explicit: bool) -> Path:
    """Where an init step may write ``target``, resolved (symlinks and ``..`` included).

    Inside the run's context directory anything goes: the run made it. Outside, only a path the
    user named explicitly as absolute is accepted, and never over something that is already
    there (a non-empty directory, or a file), since the run did not create it.
    """
    resolved = target.resolve()
    root = ctx.context_path.resolve()
    if _is_within(resolved, root):
        return resolved
    if not explicit:
        raise _InitError(
            f"{target} is outside the run's context directory {root}; init steps write only "
            "there, or to an absolute `path` named explicitly"
        )
    if resolved.is_dir():
        if any(resolved.iterdir()):
            raise _InitError(
                f"{resolved} already exists and is not empty; an init step never writes over "
                "what the run did not create (choose an empty or new directory)"
            )
    elif resolved.exists():
        raise _InitError(
            f"{resolved} already exists; an init step never writes over what the run did not create"
        )
    return resolved


def _is_explicit(value: str | None) -> bool:
    """Whether a destination from the Polyaxonfile is an absolute path the user named (not a
    ``/plx-context`` path, which maps into the run)."""
    if not value or value == _CONTEXT_ROOT or value.startswith(_CONTEXT_ROOT + "/"):
        return False
    return Path(value).expanduser().is_absolute()


def _repo_name(url: str) -> str:
    """The directory a clone of ``url`` goes to: its last path segment without ``.git``.

    A segment that names no directory of its own (``.``, ``..``: a URL ending in ``/..`` would
    otherwise point at the parent of the destination) is refused, not guessed around.
    """
    name = url.rstrip("/").split("/")[-1].split(":")[-1]
    name = name[: -len(".git")] if name.endswith(".git") else name
    if name in ("", ".", "..") or "\x00" in name:
        raise _InitError(
            f"the repository url `{redact_url_credentials(url)}` does not end in a usable "
            f"directory name (got `{name}`); end it with the repository's name"
        )
    return name


def _git_url(url: str, base: Path) -> str:
    if "://" in url or url.startswith("git@") or re.match(r"^[\w.-]+@[\w.-]+:", url):
        return url
    path = Path(url).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _run_git(args: list[str], env: Mapping[str, str], cwd: Path, secrets: Sequence[str]) -> None:
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        raise _InitError("`git` is not installed or not on PATH")
    env = {**env, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password on a terminal
    proc = subprocess.run(
        [git, *args],
        env=env,
        cwd=str(cwd),
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise _InitError(
            mask_text(f"`git {args[0]}` exited with code {proc.returncode}: {tail}", secrets)
        )


def _init_git(step: InitStep, job: PreparedJob, base: Path) -> None:
    """Clone into a temporary directory next to the destination, and move it in only once the
    clone (and checkout) succeeded: a failing clone leaves the destination as it was."""
    spec = step.spec
    url = getattr(spec, "url", None)
    if not url and step.connection:
        url = job.env.get(connection_env_prefix(step.connection) + "URL")
    if not url:
        raise _InitError("no repository url (set `git.url`, or a connection with `schema.url`)")
    if spec.revision and spec.revision.startswith("-"):
        raise _InitError(f"the revision `{spec.revision}` is not a commit, branch or tag name")
    target = _writable_target(step.dest / _repo_name(url), job.context, explicit=step.explicit_dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = list(spec.flags or []) if not isinstance(spec.flags, str) else []
    source = _git_url(url, base)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.clone-", dir=target.parent))
    try:
        clone = staging / target.name
        depth = [] if spec.revision else ["--depth", "1"]
        _run_git(["clone", *depth, *flags, "--", source, str(clone)], job.env, staging, job.secrets)
        if spec.revision:
            _run_git(["checkout", "--quiet", spec.revision], job.env, clone, job.secrets)
        if target.is_dir() and not target.is_symlink():
            # inside the run's context (an earlier attempt's clone) or an empty directory
            shutil.rmtree(target)
        os.replace(clone, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _chmod(path: Path, mode: Any) -> None:
    text = str(mode).strip()
    if isinstance(mode, int) and not isinstance(mode, bool):
        os.chmod(path, mode)
    elif _OCTAL_MODE.match(text):
        os.chmod(path, int(text.replace("o", ""), 8))
    else:  # symbolic (`+x`, `u+rwx,g+r`): let chmod(1) parse it rather than reimplementing it
        chmod = shutil.which("chmod")
        if chmod is None:
            raise _InitError(f"cannot apply the symbolic mode `{text}` without `chmod`")
        proc = subprocess.run([chmod, text, str(path)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise _InitError(f"chmod `{text}` failed: {proc.stderr.strip()}")


def _named_file(step: InitStep, ctx: RunContext, filename: str) -> Path:
    """The file an init ``file``/``dockerfile`` step writes: ``filename`` is a name inside the
    step's directory, never a way out of it (``../../x`` is refused)."""
    relative = Path(filename)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise _InitError(
            f"`filename: {filename}` must be a relative name inside the step's directory; "
            "set `path` to choose the directory"
        )
    return _writable_target(step.dest / relative, ctx, explicit=step.explicit_dest)


def _init_file(step: InitStep, ctx: RunContext) -> None:
    spec = step.spec
    target = _named_file(step, ctx, spec.filename or "file")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(spec.content, encoding="utf-8")
    if spec.chmod:
        _chmod(target, spec.chmod)


def _pairs(items: Any) -> list[tuple[str, str | None]]:
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    out: list[tuple[str, str | None]] = []
    for item in items:
        if isinstance(item, list | tuple):
            out.append((str(item[0]), str(item[1])))
        else:
            out.append((str(item), None))
    return out


def _find_source(src: str, roots: Sequence[Path]) -> Path:
    path = Path(src).expanduser()
    if path.is_absolute():
        if path.exists():
            return path
        raise _InitError(f"no such file or directory: {path}")
    for root in roots:
        if (root / path).exists():
            return root / path
    raise _InitError(f"`{src}` was not found under " + ", ".join(str(root) for root in roots))


def _copy(src: Path, dest: Path, *, want_dir: bool | None = None) -> None:
    if want_dir is True and not src.is_dir():
        raise _InitError(f"{src} is not a directory")
    if want_dir is False and not src.is_file():
        raise _InitError(f"{src} is not a file")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest)


def _copy_items(
    items: Any, step: InitStep, ctx: RunContext, roots: Sequence[Path], want_dir: bool | None
) -> None:
    """Copy each ``src`` or ``[src, dst]`` into the step's directory (``dst`` relative to it)."""
    for src, dst in _pairs(items):
        source = _find_source(src, roots)
        if dst is None:
            target = _writable_target(step.dest / source.name, ctx, explicit=step.explicit_dest)
        else:
            relative = not Path(dst).is_absolute() and ".." not in Path(dst).parts
            explicit = _is_explicit(dst) or (step.explicit_dest and relative)
            target = _writable_target(_as_path(dst, ctx, step.dest), ctx, explicit=explicit)
        _copy(source, target, want_dir=want_dir)


def render_dockerfile(spec: Any) -> str:
    """The Dockerfile text Polyaxon generates from a ``dockerfile`` type value.

    Same statements in the same order as Polyaxon's template: FROM, language env, SHELL, PATH
    additions, ENV, WORKDIR, COPY, RUN, post-run COPY, the uid/gid user, and the workdir copy.
    A ``copy`` item that is a plain path is copied into the workdir.
    """
    workdir = spec.workdir or "/code"
    shell = spec.shell or "/bin/bash"
    lines = [f"FROM {spec.image}", ""]
    if spec.lang_env:
        lines += [
            f"ENV LC_ALL {spec.lang_env}",
            f"ENV LANG {spec.lang_env}",
            f"ENV LANGUAGE {spec.lang_env}",
            "",
        ]
    lines += [f"ENV SHELL {shell}", ""]
    for path in spec.path or []:
        lines.append(f'ENV PATH="${{PATH}}:{path}"')
    if spec.path:
        lines.append("")
    for key, value in (spec.env or {}).items():
        lines.append(f"ENV {key} {value if isinstance(value, str) else json.dumps(value)}")
    if spec.env:
        lines.append("")
    lines += [f"WORKDIR {workdir}", ""]
    for src, dst in _pairs(spec.copy_):
        lines.append(f"COPY {src} {dst or workdir}")
    if spec.copy_:
        lines.append("")
    for command in spec.run or []:
        lines.append(f"RUN {command}")
    if spec.run:
        lines.append("")
    for src, dst in _pairs(spec.post_run_copy):
        lines.append(f"COPY {src} {dst or workdir}")
    if spec.post_run_copy:
        lines.append("")
    if spec.uid and spec.gid:
        lines += [
            "# Drop root user and use Polyaxon user",
            f"RUN groupadd -g {spec.gid} -r polyaxon && useradd -r -m -g polyaxon "
            f"-u {spec.uid} {spec.username or 'polyaxon'}",
            "",
        ]
    if spec.workdir_path:
        lines += [f"COPY {spec.workdir_path} {workdir}", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def _init_dockerfile(step: InitStep, ctx: RunContext) -> None:
    target = _named_file(step, ctx, step.spec.filename or "Dockerfile")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_dockerfile(step.spec), encoding="utf-8")


def _run_init(
    job: PreparedJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> None:
    base = job.base_dir or job.cwd
    ctx = job.context
    roots = [base, ctx.artifacts_root / ctx.project_name, ctx.artifacts_root]
    for step in job.init:
        try:
            if step.kind == "git":
                _init_git(step, job, base)
            elif step.kind == "file":
                _init_file(step, ctx)
            elif step.kind == "dockerfile":
                _init_dockerfile(step, ctx)
            elif step.kind == "paths":
                _copy_items(step.spec, step, ctx, roots, None)
            elif step.kind == "artifacts":
                _copy_items(step.spec.files, step, ctx, roots, False)
                _copy_items(step.spec.dirs, step, ctx, roots, True)
            elif step.kind == "container":
                step.dest.mkdir(parents=True, exist_ok=True)
                result = run_process(
                    list(step.argv),
                    env=job.env,
                    cwd=step.dest,
                    timeout=job.timeout,
                    on_line=on_line,
                    secrets=job.secrets,
                    cancel_event=cancel_event,
                    log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
                )
                if not result.succeeded:
                    raise _InitError(_process_message(result, job.timeout))
        except _InitError as exc:
            raise _InitError(f"{step.describe()} failed: {exc}") from None
        except (OSError, ValueError) as exc:
            raise _InitError(f"{step.describe()} failed: {exc}") from None


# --------------------------------------------------------------------------------------------------
# execute_job


def _process_message(result: ProcessResult, timeout: float | None) -> str:
    if result.timed_out:
        limit = timeout if timeout is not None else result.duration
        return f"timed out after {limit:g}s"
    if result.cancelled:
        return "was cancelled"
    if result.signal is not None:
        import signal as _signal

        try:
            name = _signal.Signals(result.signal).name
        except ValueError:
            name = str(result.signal)
        return f"killed by signal {name}"
    message = f"exited with code {result.returncode}"
    tail = [line for line in result.stderr_tail if line.strip()][-_STDERR_LINES_IN_MESSAGE:]
    if tail:
        message += ": " + "\n".join(tail)
    return message


def _last_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    last: dict[str, Any] = {}
    for record in records:
        for key, value in record.items():
            if key not in ("step", "timestamp"):
                last[key] = value
    return last


def _finish_ttl(job: PreparedJob) -> None:
    """TTL 0: the run directory goes now; otherwise its expiry is recorded next to it."""
    if job.ttl is None:
        return
    run_path = job.context.run_path
    if job.ttl == 0:
        shutil.rmtree(run_path, ignore_errors=True)
        return
    expires = datetime.now(UTC) + timedelta(seconds=job.ttl)
    with contextlib.suppress(OSError):
        (run_path / "ttl.json").write_text(
            json.dumps({"ttl": job.ttl, "expires_at": expires.isoformat()}), encoding="utf-8"
        )


def execute_job(
    job: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
) -> JobResult:
    """Run the init steps and the process of ``job``, then read back its outputs and metrics.

    Never raises for what the job itself did: a failed init step, a command that does not
    exist, a non-zero exit, a timeout or invalid outputs all come back as a `JobResult` with
    status ``failed`` (``stopped`` when ``cancel_event`` was set, ``skipped`` for a build op
    prepared with ``skip_builds``) and a message a user can act on. Secrets are masked in
    every line given to ``on_line`` and in the message; outputs and metrics are the values
    the job produced, unmasked, because they are data for the ops downstream: whoever shows
    them to people masks them (`polyaxon_prefect.runtime._masking.mask_value`).

    Each call is one attempt: outputs left by an earlier attempt in the same run directory are
    removed first, so a retry never reports stale values.
    """
    secrets = job.secrets
    if job.is_build:
        return JobResult(
            status="skipped",
            outputs={},
            metrics={},
            message=f"build `{job.op_name}` skipped: the local runtime has no image builder",
            process=None,
        )
    ctx = job.context
    try:
        ctx.make_dirs()
        for name in (OUTPUTS_FILE, METRICS_FILE):
            with contextlib.suppress(FileNotFoundError):
                (ctx.run_outputs_path / name).unlink()
        _run_init(job, on_line, cancel_event)
    except _InitError as exc:
        _finish_ttl(job)
        return JobResult("failed", {}, {}, mask_text(str(exc), secrets), None)
    except OSError as exc:
        _finish_ttl(job)
        return JobResult(
            "failed",
            {},
            {},
            mask_text(f"cannot prepare the run directory: {exc}", secrets),
            None,
        )
    if cancel_event is not None and cancel_event.is_set():
        _finish_ttl(job)
        return JobResult("stopped", {}, {}, "cancelled before the process started", None)

    try:
        result = run_process(
            job.argv,
            env=job.env,
            cwd=job.cwd,
            timeout=job.timeout,
            on_line=on_line,
            secrets=secrets,
            cancel_event=cancel_event,
            log_path=ctx.run_artifacts_path / "logs" / LOG_FILE,
        )
    except ProcessStartError as exc:
        _finish_ttl(job)
        return JobResult("failed", {}, {}, mask_text(str(exc), secrets), None)

    outputs_file = str(ctx.run_outputs_path / OUTPUTS_FILE)
    problems: list[Problem] = []
    outputs: dict[str, Any] = {}
    try:
        logged = read_outputs(ctx.run_outputs_path)
    except OutputsError as exc:
        logged = {}
        problems.append(Problem(str(exc), rule="outputs_file", file=outputs_file))
    metrics = _last_metrics(read_metrics(ctx.run_outputs_path))

    if result.succeeded:
        if not problems:
            outputs, problems = validate_outputs(job.outputs, logged, file=outputs_file)
        if problems:
            status = "failed"
            message = "the process exited with code 0 but its outputs are invalid: " + "; ".join(
                problem.message for problem in problems
            )
        else:
            status, message = "succeeded", "succeeded"
    else:
        outputs = {k: v for k, v in logged.items() if k in {io.name for io in job.outputs}}
        status = "stopped" if result.cancelled else "failed"
        message = _process_message(result, job.timeout)
    _finish_ttl(job)
    return JobResult(
        status=status,
        outputs=outputs,
        metrics=metrics,
        message=mask_text(message, secrets),
        process=result,
        problems=problems,
    )
