"""A job's ``init`` section: entries (``toInit`` params first), rendered into `InitStep`s, and
run through `INIT_HANDLERS`, one handler per source.

A table rather than a branch per source, so a new source (or a replica of a distributed run
running the same steps) adds one entry and nothing else.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import TemplateError, render_value
from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._errors import InitStepError
from polyaxon_prefect.runtime._outcome import LOG_FILE, process_message
from polyaxon_prefect.runtime._paths import as_path, is_explicit, pairs, writable_target
from polyaxon_prefect.runtime._prepared import InitStep
from polyaxon_prefect.runtime.docker._dockerfile import render_dockerfile
from polyaxon_prefect.runtime.render._git import init_git
from polyaxon_prefect.runtime.render._problem_collector import PathT, Problems, first
from polyaxon_prefect.runtime.render._render_sections import python_argv, render_argv, render_model
from polyaxon_prefect.runtime.session._process import run_process
from polyaxon_prefect.specs.params._validate_params import to_init_problem

if TYPE_CHECKING:
    from polyaxon_prefect.runtime._prepared import PreparedJob

__all__ = [
    "INIT_HANDLERS",
    "InitRun",
    "InitStep",
    "init_entries",
    "init_handler",
    "init_steps",
    "render_init_list",
    "run_init",
    "to_init_entries",
]

_OCTAL_MODE = re.compile(r"^(?:0o?)?[0-7]{3,4}$")
_SERVER_SOURCES = ("tensorboard", "lineage_ref", "model_ref", "artifact_ref")


# --------------------------------------------------------------------------------------------------
# entries and steps


def to_init_entries(component: Any, operation: Any, values: Mapping[str, Any]) -> list[Any]:
    """Params with ``toInit`` become init entries, prepended to ``run.init`` (Polyaxon's rule)."""
    from polyaxon_prefect.specs.sections._init import Init

    entries: list[Any] = []
    problems = Problems()
    op_params = operation.params or {}
    for io in component.inputs or []:
        param = op_params.get(io.name)
        to_init = first(getattr(param, "to_init", None), io.to_init)
        if to_init is not True or values.get(io.name) is None:
            continue
        value = values[io.name]
        data = value.to_dict() if hasattr(value, "to_dict") else value
        connection = first(getattr(param, "connection", None), io.connection)
        if io.type in ("git", "dockerfile", "artifacts"):
            entry: dict[str, Any] = {io.type: data}
        elif io.type == "path":
            entry = {"paths": data if isinstance(data, list) else [data]}
        elif connection:
            entry = {}
        else:
            problem = to_init_problem(io.name, io, connection, ("params", io.name))
            problems.items.extend([problem] if problem is not None else [])
            continue
        if connection:
            entry["connection"] = connection
        entries.append(Init.model_validate(entry))
    if problems.items:
        raise PolyaxonfileError(problems.items)
    return entries


def init_entries(
    run: Any,
    component: Any,
    operation: Any,
    values: Mapping[str, Any],
    context: Mapping[str, Any],
    problems: Problems,
) -> tuple[list[Any], int]:
    """Every ``init`` entry of the op, unrendered: its params' ``toInit`` ones first, then
    ``run.init`` (rendered first when the whole list is one template); and how many of them
    are ``toInit`` ones."""
    raw_init = render_init_list(run, context, problems)
    to_init = to_init_entries(component, operation, values)
    return [*to_init, *raw_init], len(to_init)


def render_init_list(run: Any, context: Mapping[str, Any], problems: Problems) -> list[Any]:
    """``run.init``, rendered first when the whole list is one template."""
    raw_init = run.init or []
    if not isinstance(raw_init, str):
        return list(raw_init)
    path: PathT = ("component", "run", "init")
    try:
        raw_init = render_value(raw_init, context)
    except TemplateError as exc:
        problems.template(exc, path)
        return []
    if not isinstance(raw_init, list):
        problems.add(f"`init` must render to a list, got {raw_init!r}", "rendered_type", path)
        return []
    return raw_init


def init_steps(
    entries: Sequence[Any],
    context: Mapping[str, Any],
    run_context: RunContext,
    problems: Problems,
    path: PathT,
    offset: int,
) -> list[InitStep]:
    """Render the init entries (the first ``offset`` are ``toInit`` ones, located at
    ``params``) into steps; a problem is recorded for each entry that cannot run locally."""
    steps: list[InitStep] = []
    for index, raw in enumerate(entries):
        where = (*path, index - offset) if index >= offset else ("params",)
        entry = _render_entry(raw, context, where, problems)
        if entry is None:
            continue
        step = _init_step(index, entry, context, run_context, where, problems)
        if step is not None:
            steps.append(step)
    return steps


def _render_entry(
    raw: object, context: Mapping[str, Any], where: PathT, problems: Problems
) -> Any | None:
    """One entry rendered into an ``Init`` model, or None (the problem recorded)."""
    from polyaxon_prefect.specs.kubernetes._k8s import Container
    from polyaxon_prefect.specs.sections._init import Init

    data = raw.to_dict() if hasattr(raw, "to_dict") else raw
    # A custom container's command/args are rendered as argv below, not as literals.
    raw_container = data.pop("container", None) if isinstance(data, dict) else None
    entry = render_model(data, Init, context, where, problems)
    if entry is None:
        return None
    if isinstance(raw_container, str):
        container = render_model(raw_container, Container, context, (*where, "container"), problems)
        return entry.model_copy(update={"container": container})
    if raw_container is not None:
        return entry.model_copy(update={"container": Container.model_validate(raw_container)})
    return entry


def _init_step(
    index: int,
    entry: Any,
    context: Mapping[str, Any],
    run_context: RunContext,
    where: PathT,
    problems: Problems,
) -> InitStep | None:
    """The step of a rendered entry: its source, a custom container, or a bare connection."""
    dest = (
        as_path(entry.path, run_context, run_context.artifacts_path)
        if entry.path
        else run_context.artifacts_path
    )
    explicit = is_explicit(entry.path)
    source = entry.source
    if source in _SERVER_SOURCES:
        problems.add(
            f"init `{source}` needs a Polyaxon server and cannot run locally",
            "unsupported_init",
            (*where, source),
            hint="fetch the files with a `paths` or `git` init step instead",
        )
        return None
    if source is not None and source not in INIT_HANDLERS:
        problems.add(
            f"init `{source}` cannot run locally: no handler runs it",
            "unsupported_init",
            (*where, source),
            hint=f"use one of: {', '.join(sorted(INIT_HANDLERS))}",
        )
        return None
    if source is None and entry.container is not None:
        container = entry.container
        argv = render_argv(container.command, context, (*where, "container", "command"), problems)
        argv += render_argv(container.args, context, (*where, "container", "args"), problems)
        if not argv:
            problems.add(
                "an init container needs a `command`", "init_container", (*where, "container")
            )
            return None
        return InitStep(
            index,
            "container",
            container,
            dest,
            entry.connection,
            tuple(python_argv(argv)),
            explicit_dest=explicit,
        )
    if source is None:
        return InitStep(index, "connection", None, dest, entry.connection)
    return InitStep(
        index, source, getattr(entry, source), dest, entry.connection, explicit_dest=explicit
    )


# --------------------------------------------------------------------------------------------------
# running the steps


@dataclass(frozen=True)
class InitRun:
    """What every handler may need: the job, its base folder, where sources are looked up, and
    the line callback and cancel event of the attempt."""

    job: PreparedJob
    base: Path
    roots: tuple[Path, ...]
    on_line: Callable[[str, str], None] | None = None
    cancel_event: threading.Event | None = None


def _chmod(path: Path, mode: object) -> None:
    text = str(mode).strip()
    if isinstance(mode, int) and not isinstance(mode, bool):
        os.chmod(path, mode)
    elif _OCTAL_MODE.match(text):
        os.chmod(path, int(text.replace("o", ""), 8))
    else:  # symbolic (`+x`, `u+rwx,g+r`): let chmod(1) parse it rather than reimplementing it
        chmod = shutil.which("chmod")
        if chmod is None:
            raise InitStepError(f"cannot apply the symbolic mode `{text}` without `chmod`")
        proc = subprocess.run([chmod, text, str(path)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise InitStepError(f"chmod `{text}` failed: {proc.stderr.strip()}")


def _named_file(step: InitStep, ctx: RunContext, filename: str) -> Path:
    """The file an init ``file``/``dockerfile`` step writes: ``filename`` is a name inside the
    step's directory, never a way out of it (``../../x`` is refused)."""
    relative = Path(filename)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise InitStepError(
            f"`filename: {filename}` must be a relative name inside the step's directory; "
            "set `path` to choose the directory"
        )
    return writable_target(step.dest / relative, ctx, explicit=step.explicit_dest)


def _init_file(step: InitStep, ctx: RunContext) -> None:
    spec = step.spec
    target = _named_file(step, ctx, spec.filename or "file")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(spec.content, encoding="utf-8")
    if spec.chmod:
        _chmod(target, spec.chmod)


def _find_source(src: str, roots: Sequence[Path]) -> Path:
    path = Path(src).expanduser()
    if path.is_absolute():
        if path.exists():
            return path
        raise InitStepError(f"no such file or directory: {path}")
    for root in roots:
        if (root / path).exists():
            return root / path
    raise InitStepError(f"`{src}` was not found under " + ", ".join(str(root) for root in roots))


def _copy(src: Path, dest: Path, *, want_dir: bool | None = None) -> None:
    if want_dir is True and not src.is_dir():
        raise InitStepError(f"{src} is not a directory")
    if want_dir is False and not src.is_file():
        raise InitStepError(f"{src} is not a file")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest)


def _copy_items(
    items: object, step: InitStep, ctx: RunContext, roots: Sequence[Path], want_dir: bool | None
) -> None:
    """Copy each ``src`` or ``[src, dst]`` into the step's directory (``dst`` relative to it)."""
    for src, dst in pairs(items):
        source = _find_source(src, roots)
        if dst is None:
            target = writable_target(step.dest / source.name, ctx, explicit=step.explicit_dest)
        else:
            relative = not Path(dst).is_absolute() and ".." not in Path(dst).parts
            explicit = is_explicit(dst) or (step.explicit_dest and relative)
            target = writable_target(as_path(dst, ctx, step.dest), ctx, explicit=explicit)
        _copy(source, target, want_dir=want_dir)


def _init_dockerfile(step: InitStep, ctx: RunContext) -> None:
    target = _named_file(step, ctx, step.spec.filename or "Dockerfile")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_dockerfile(step.spec), encoding="utf-8")


def _git(step: InitStep, run: InitRun) -> None:
    init_git(step, run.job, run.base)


def _file(step: InitStep, run: InitRun) -> None:
    _init_file(step, run.job.context)


def _dockerfile(step: InitStep, run: InitRun) -> None:
    _init_dockerfile(step, run.job.context)


def _paths(step: InitStep, run: InitRun) -> None:
    _copy_items(step.spec, step, run.job.context, run.roots, None)


def _artifacts(step: InitStep, run: InitRun) -> None:
    _copy_items(step.spec.files, step, run.job.context, run.roots, False)
    _copy_items(step.spec.dirs, step, run.job.context, run.roots, True)


def _container(step: InitStep, run: InitRun) -> None:
    job = run.job
    step.dest.mkdir(parents=True, exist_ok=True)
    result = run_process(
        list(step.argv),
        env=job.env,
        cwd=step.dest,
        timeout=job.timeout,
        on_line=run.on_line,
        secrets=job.secrets,
        cancel_event=run.cancel_event,
        log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
    )
    if not result.succeeded:
        raise InitStepError(process_message(result, job.timeout))


def _connection(step: InitStep, run: InitRun) -> None:
    """A bare connection: its env is already in the job's env, so there is nothing to fetch."""


InitHandler = Callable[[InitStep, InitRun], None]

INIT_HANDLERS: dict[str, InitHandler] = {
    "git": _git,
    "file": _file,
    "dockerfile": _dockerfile,
    "paths": _paths,
    "artifacts": _artifacts,
    "container": _container,
    "connection": _connection,
}
"""How each init source runs, by `InitStep.kind`. A source with no entry is refused when the
job is prepared (rule ``unsupported_init``) and, should a step still reach `run_init`, fails
the job there: a step never does nothing silently."""


def init_handler(kind: str) -> InitHandler:
    """The handler of init source ``kind``.

    Raises:
        InitStepError: no handler is registered for ``kind``.
    """
    handler = INIT_HANDLERS.get(kind)
    if handler is None:
        known = ", ".join(sorted(INIT_HANDLERS))
        raise InitStepError(f"no handler runs init `{kind}` (the handled sources: {known})")
    return handler


def run_init(
    job: PreparedJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> None:
    """Run ``job``'s init steps in order; the first failure raises `InitStepError` naming the
    step (`InitStep.describe`) and its cause."""
    base = job.base_dir or job.cwd
    ctx = job.context
    roots = (base, ctx.artifacts_root / ctx.project_name, ctx.artifacts_root)
    run = InitRun(job, base, roots, on_line, cancel_event)
    for step in job.init:
        try:
            init_handler(step.kind)(step, run)
        except InitStepError as exc:
            raise InitStepError(f"{step.describe()} failed: {exc}") from None
        except (OSError, ValueError) as exc:
            raise InitStepError(f"{step.describe()} failed: {exc}") from None
