"""Rendering a job's sections with params, ``globals`` and connections: argv, text fields,
whole sections validated back into their models, and the main container.

Apart from `prepare_job` so that every run that renders a container (a job today, each replica
of a distributed run later) renders it the same way: one argument per element, text kept as the
user's template printed it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from polyaxon_prefect.loading import (
    TemplateError,
    as_str,
    evaluate_expression,
    read_literal,
    render_text,
    render_value,
)
from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._paths import as_path
from polyaxon_prefect.runtime.render._problem_collector import PathT, Problems, first

__all__ = [
    "RenderedContainer",
    "RunSettings",
    "has_template",
    "python_argv",
    "render_argv",
    "render_container",
    "render_model",
    "render_run_connections",
    "render_scalar",
    "render_settings",
    "render_text_value",
]

_PYTHON_NAMES = frozenset({"python", "python3"})
_Model = TypeVar("_Model", bound=BaseModel)


def has_template(value: Any) -> bool:
    """Whether ``value`` (or a value in it) is written as a template."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(has_template(v) for v in value)
    return False


def render_text_value(value: Any, context: Mapping[str, Any]) -> str:
    """A string field rendered as text (what the user's template printed), not literal-typed."""
    if not isinstance(value, str):
        return as_str(value)
    if not has_template(value):
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


def render_argv(
    items: Any, context: Mapping[str, Any], path: PathT, problems: Problems
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
            if native is _TEXT:
                return _as_args(value)
            if isinstance(native, list | tuple):
                return _as_args(list(native))
        return [text] if text.strip() else []
    argv: list[str] = []
    for index, item in enumerate(items):
        if not has_template(item):
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


def render_model(
    value: Any, model: type[_Model], context: Mapping[str, Any], path: PathT, problems: Problems
) -> _Model | None:
    """Render a (possibly templated) section and validate it back into ``model``."""
    if value is None:
        return None
    data = value.to_dict() if hasattr(value, "to_dict") else value
    if not has_template(data):
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


def render_scalar(
    value: Any, context: Mapping[str, Any], path: PathT, problems: Problems, kind: type
) -> Any:
    if value is None or not has_template(value):
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


def python_argv(argv: list[str]) -> list[str]:
    """``python``/``python3`` run with the interpreter that runs polyaxon-prefect.

    The job should see the same environment (packages, ``polyaxon_prefect.tracking`` included)
    as the runtime that launched it, whatever ``python`` happens to mean on ``PATH`` (a system
    Python, another virtualenv). A user who wants another interpreter gives its path.
    """
    if argv and argv[0] in _PYTHON_NAMES:
        return [sys.executable, *argv[1:]]
    return argv


def python_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the directory of the interpreter that runs polyaxon-prefect first on
    ``PATH``, so that a shell command's ``python`` (``bash -c "python train.py"``, every legacy
    ``cmd``) is the same interpreter as a ``python`` argv (`python_argv`), also when the CLI was
    started as ``.venv/bin/polyaxon-prefect`` without activating its environment."""
    bindir = os.path.dirname(sys.executable)
    entries = [e for e in env.get("PATH", "").split(os.pathsep) if e]
    if entries[:1] == [bindir]:
        return dict(env)
    return {**env, "PATH": os.pathsep.join([bindir, *entries])}


@dataclass
class RenderedContainer:
    """The main container's rendered fields; ``argv`` as it runs here (`python_argv`)."""

    cwd: Path
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None


def render_container(
    run: Any, context: Mapping[str, Any], run_context: RunContext, base: Path, problems: Problems
) -> RenderedContainer:
    """Render the main container: ``command``/``args`` as argv, ``env``, ``workingDir``, ``image``.

    Only a whole-section template is rendered as a model; the fields are rendered one by one,
    as text, so the arguments keep the user's spelling.
    """
    from polyaxon_prefect.specs.kubernetes._k8s import Container

    path: PathT = ("component", "run", "container")
    container = run.container
    if isinstance(container, str):
        container = render_model(container, Container, context, path, problems)
    rendered = RenderedContainer(cwd=base)
    if container is None:
        if run.container is None:
            problems.add("a job needs a `container` with a `command`", "no_container", path)
        return rendered
    rendered.argv = render_argv(container.command, context, (*path, "command"), problems)
    rendered.argv += render_argv(container.args, context, (*path, "args"), problems)
    if not rendered.argv and not problems.items:
        problems.add(
            "the container has no `command`; locally there is no image entrypoint to fall back on",
            "no_command",
            (*path, "command"),
            hint="set `command:`, e.g. `command: [python, train.py]`",
        )
    rendered.env = _render_env(container.env or [], context, path, problems)
    if container.working_dir:
        try:
            text = render_text_value(container.working_dir, context)
            rendered.cwd = as_path(text, run_context, base)
        except TemplateError as exc:
            problems.template(exc, (*path, "workingDir"))
    if container.image:
        try:
            rendered.image = render_text_value(container.image, context)
        except TemplateError as exc:
            problems.template(exc, (*path, "image"))
    rendered.argv = python_argv(rendered.argv)
    return rendered


def _render_env(
    variables: list[Any], context: Mapping[str, Any], path: PathT, problems: Problems
) -> dict[str, str]:
    env: dict[str, str] = {}
    for index, var in enumerate(variables):
        where = (*path, "env", index)
        if var.value_from is not None:
            problems.add(
                f"env var `{var.name}` uses `valueFrom`, which has no local meaning",
                "env_value_from",
                (*where, "valueFrom"),
                hint="use a literal `value`, or a connection whose secret provides it",
            )
            continue
        try:
            env[var.name] = render_text_value(var.value or "", context)
        except TemplateError as exc:
            problems.template(exc, (*where, "value"))
    return env


def render_run_connections(run: Any, context: Mapping[str, Any], problems: Problems) -> Any:
    """``run`` with its ``connections`` rendered: a template for the whole list, or one entry
    per template (as Polyaxon's hub kaniko writes ``["{{ destination.connection }}"]``), where
    an entry that renders empty is dropped."""
    path: PathT = ("component", "run", "connections")
    if isinstance(run.connections, str):
        names = render_scalar(run.connections, context, path, problems, list)
        return run.model_copy(update={"connections": names if isinstance(names, list) else []})
    if isinstance(run.connections, list) and any(has_template(c) for c in run.connections):
        rendered = [
            render_scalar(c, context, (*path, i), problems, str)
            for i, c in enumerate(run.connections)
        ]
        kept = [str(name) for name in rendered if name not in (None, "", "None")]
        return run.model_copy(update={"connections": kept})
    return run


@dataclass(frozen=True)
class RunSettings:
    """The rendered ``termination``, ``cache`` and ``tags`` (the operation's over the
    component's)."""

    termination: Any
    cache: Any
    tags: tuple[str, ...]


def render_settings(
    operation: Any, component: Any, context: Mapping[str, Any], problems: Problems
) -> RunSettings:
    from polyaxon_prefect.specs.sections._cache import Cache
    from polyaxon_prefect.specs.sections._termination import Termination

    termination = render_model(
        first(operation.termination, component.termination),
        Termination,
        context,
        ("component", "termination"),
        problems,
    )
    cache = render_model(
        first(operation.cache, component.cache), Cache, context, ("component", "cache"), problems
    )
    tags = first(operation.tags, component.tags) or []
    if isinstance(tags, str):
        tags = render_scalar(tags, context, ("component", "tags"), problems, list) or []
    return RunSettings(termination, cache, tuple(str(tag) for tag in tags))
