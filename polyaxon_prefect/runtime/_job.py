"""Turn a validated single-container operation into a local process run, and run it.

Two steps with a clean boundary, so the flow layer, DAG ops and matrix trials can all reuse them:

* `prepare_container` does everything that can fail *before* anything runs, for any run with one
  container (a job, a replica of a distributed run, a new single-pod kind): it merges params,
  renders the container, ``env``, ``init``, connections and run settings (every template error
  reported at once, located at its field) and computes the cache key. `prepare_job` is the
  ``job`` executor's step: it refuses the kinds that do not run as one terminating process.
* `execute_job` runs the init steps and the process (no shell: a param value like
  ``"; touch pwned"`` stays one literal argument), then reads back the outputs and metrics.

Each step lives in its own module (``_param_values``, ``_render``, ``_init``, ``_build``,
``_cache_key``, ``_locate``, ``_outcome``); nothing here imports Prefect.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem, UnsupportedFeatureError
from polyaxon_prefect.loading import ParamValue, build_context
from polyaxon_prefect.runtime._context import DEFAULT_PROJECT, RunContext, new_run_context
from polyaxon_prefect.runtime._errors import InitStepError, ProcessStartError
from polyaxon_prefect.runtime._launcher import PROCESS, Launch, Launcher
from polyaxon_prefect.runtime._outcome import (
    LOG_FILE,
    failed,
    finish_ttl,
    job_outcome,
)
from polyaxon_prefect.runtime._prepared import InitStep, PreparedJob
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.cache._cache_key import cache_enabled, cache_key
from polyaxon_prefect.runtime.cache._code_hash import op_code
from polyaxon_prefect.runtime.cache._code_rules import key_with_code
from polyaxon_prefect.runtime.docker._build import BuildNotSupportedError, check_build
from polyaxon_prefect.runtime.docker._dockerfile import render_dockerfile
from polyaxon_prefect.runtime.gpu._gpu_admit import (
    RESOURCES,
    check_gpu_capacity,
    container_gpu_request,
)
from polyaxon_prefect.runtime.logs._masking import (
    mask_value,
    remember_secrets,
    with_url_credentials,
)
from polyaxon_prefect.runtime.render._compat_path import compat_env
from polyaxon_prefect.runtime.render._connections import (
    Connection,
    connections_env,
    get_connection,
    load_connections,
)
from polyaxon_prefect.runtime.render._init import (
    init_steps,
    render_init_list,
    run_init,
    to_init_entries,
)
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._param_values import (
    jsonable_params,
    merge_params,
    params_env,
    set_values,
    template_params,
)
from polyaxon_prefect.runtime.render._problems import Problems, first
from polyaxon_prefect.runtime.render._render import (
    RenderedContainer,
    python_argv,
    render_container,
    render_model,
    render_run_connections,
    render_scalar,
)
from polyaxon_prefect.runtime.session._process import run_process
from polyaxon_prefect.specs import (
    LOCAL,
    ONE_PROCESS_KINDS,
    InitSource,
    Status,
    runs_as_one_process,
)
from polyaxon_prefect.tracking import METRICS_FILE, OUTPUTS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile

__all__ = [
    "DEFAULT_PROJECT",
    "LOCAL",
    "LOG_FILE",
    "ONE_PROCESS_KINDS",
    "BuildNotSupportedError",
    "InitStep",
    "PrepareOptions",
    "PreparedJob",
    "execute_job",
    "merge_params",
    "prepare_container",
    "prepare_job",
    "render_dockerfile",
    "run_one_process",
]


# --------------------------------------------------------------------------------------------------
# prepare_job


def prepare_job(
    loaded: LoadedPolyaxonfile,
    options: PrepareOptions | None = None,
    launcher: Launcher = PROCESS,
    **keywords: Any,
) -> PreparedJob:
    """Resolve a loaded job operation into argv, env, cwd, init steps and run settings, for
    ``launcher`` (default: a process on this machine).

    ``options`` says how (`PrepareOptions`); its fields may be given as ``keywords`` instead
    (``prepare_job(loaded, params={"lr": 0.1})``), not both.

    Raises:
        PolyaxonfileError: bad or missing params, template errors (every one, located).
        UnsupportedFeatureError: a run kind that does not run as one process (it has replicas,
            ops or a server), or an init source that cannot run locally.
        BuildNotSupportedError: a build op without ``skip_builds``, where nothing builds images.
        UnknownConnectionError: a connection name the connections file does not define.
        ConnectionsError: a connection's local secret/config map is missing.
    """
    if options is not None and keywords:
        raise TypeError("give `options` or its fields as keywords, not both")
    options = options or PrepareOptions(**keywords)
    kind = getattr(_component_of(loaded.operation).run, "kind", None)
    if not runs_as_one_process(kind):
        raise UnsupportedFeatureError([_not_one_process(kind)])
    # a launcher that builds images decides about build ops itself (`Launcher.prepare`)
    local = dataclasses.replace(options, skip_builds=True) if launcher.builds_images else options
    job, context = prepare_container(loaded, local)
    container = getattr(_component_of(loaded.operation).run, "container", None)
    gpus = container_gpu_request(container, context, RESOURCES, loaded)
    check_gpu_capacity([gpus], RESOURCES, loaded)
    job = dataclasses.replace(job, gpu_requests=(gpus,))
    [job] = launcher.prepare(loaded, options, [job], [container])
    return job


def _not_one_process(kind: str | None) -> Problem:
    one_process = " or ".join(f"`{k}`" for k in ONE_PROCESS_KINDS)
    return Problem(
        f"run kind `{kind}` cannot run as one process: only {one_process} can",
        rule="unsupported_kind",
        path=("component", "run", "kind"),
        hint=f"run it through its executor: `executor_for({kind!r}).prepare(...)`, "
        "as `polyaxon_prefect.run` does",
    )


def prepare_container(
    loaded: LoadedPolyaxonfile, options: PrepareOptions, run: Any = None
) -> tuple[PreparedJob, Mapping[str, Any]]:
    """Prepare ``run`` (default: the component's run), one container, as a local process:
    the step every single-container kind shares, whatever its kind (a job, each replica of a
    distributed run, a server). Returns the job and the context its templates were rendered
    with (params, ``globals``, connections), for the kind's own fields.

    Raises what `prepare_job` raises, except for the run kind, which is not looked at.
    """
    operation = loaded.operation
    component = _component_of(operation)
    base = _base_dir(loaded, options.base_dir)
    op_name = operation.name or component.name or "job"
    values = merge_params(
        component, operation, getattr(loaded, "params", {}) or {}, options.params or {}
    )
    run_context = options.run_context
    if run_context is None:  # directories are made by execute_job, not for a failed prepare
        run_context = new_run_context(op_name)
    given: frozenset[str] = getattr(loaded, "given_params", frozenset())
    typed = template_params(component, operation, values, run_context.globals_dict(), given)
    run = run if run is not None else component.run
    job = _render_job(loaded, run, values, typed, run_context, options, base)
    is_build, notes = check_build(operation, component, job.steps, op_name, options.skip_builds)
    secrets = _secrets(job, values, options.secrets)
    key = (
        cache_key(
            component=component,
            cache=job.cache,
            values=values,
            run=job.run,
            connection_names=job.connection_names,
            context=run_context,
        )
        if job.cache_on
        else None
    )
    timeout = getattr(job.termination, "timeout", None)
    argv = python_argv(job.container.argv)
    env = _environment(component, operation, values, run_context, job)
    env.update(compat_env(argv, env, [io.name for io in component.outputs or []]))
    code_hash = None
    if key is not None or options.in_pipeline:  # a DAG op's hash also decides a restart's reuse
        code = op_code(job.container.cwd, argv, env, job.steps, base, run_context.artifacts_root)
        code_hash = code.digest
        if key is not None and code.digest is None:
            notes.append(f"op `{op_name}` {code.reason}")
        key = key_with_code(key, code.digest) if key is not None and code.digest else None
    prepared = PreparedJob(
        op_name=op_name,
        argv=argv,
        env=env,
        cwd=job.container.cwd,
        image=job.container.image,
        secrets=secrets,
        timeout=float(timeout) if timeout is not None else None,
        max_retries=int(getattr(job.termination, "max_retries", None) or 0),
        ttl=getattr(job.termination, "ttl", None),
        cache_key=key,
        cache_ttl=getattr(job.cache, "ttl", None) if job.cache_on else None,
        params=mask_value(jsonable_params(set_values(component, values)), secrets),
        outputs=list(component.outputs or []),
        context=run_context,
        is_build=is_build,
        tags=job.tags,
        init=tuple(job.steps),
        base_dir=base,
        notes=tuple(notes),
        code_hash=code_hash,
    )
    return prepared, job.context


def _secrets(
    job: _RenderedJob, values: Mapping[str, Any], run_secrets: tuple[str, ...]
) -> tuple[str, ...]:
    """The connections' secrets and the credentials written into a URL (the URLs each init
    source's model names in `InitSource.CREDENTIAL_URLS`, a connection's, a param's), with
    those of the run it is part of (``run_secrets``: a secret follows its value from op to
    op), remembered so this process masks them wherever they appear."""
    secrets = with_url_credentials(
        tuple(dict.fromkeys([*job.secrets, *run_secrets])),
        [url for step in job.steps for url in _credential_urls(step.spec)],
        [dict(conn.schema_ or {}) for conn in job.used],
        jsonable_params(values),
    )
    remember_secrets(secrets)
    return secrets


def _credential_urls(spec: object) -> list[str]:
    return spec.credential_urls() if isinstance(spec, InitSource) else []


def _component_of(operation: Any) -> Any:
    if operation.component is None:
        raise PolyaxonfileError(
            [Problem("the operation has no component to run", rule="no_component")]
        )
    return operation.component


def _base_dir(loaded: Any, base_dir: Path | None) -> Path:
    if base_dir is not None:
        return Path(base_dir).absolute()
    files = getattr(loaded, "files", ()) or ()
    if files and "://" not in str(files[0]):  # a file read from a URL: the current directory
        return Path(files[0]).absolute().parent
    return Path.cwd()


@dataclass(frozen=True)
class _RenderedJob:
    """The sections of a job rendered with its params, globals and connections."""

    run: Any  # ``component.run`` with its connections rendered (what the cache key hashes)
    container: RenderedContainer
    steps: list[InitStep]
    used: list[Connection]
    connection_names: list[str]
    connection_env: dict[str, str]
    secrets: tuple[str, ...]
    termination: Any
    cache: Any
    cache_on: bool
    tags: tuple[str, ...]
    context: Mapping[str, Any]
    """What the templates were rendered with: params, ``globals`` and connections."""


def _render_job(
    loaded: LoadedPolyaxonfile,
    run: Any,
    values: Mapping[str, Any],
    params: dict[str, ParamValue],
    run_context: RunContext,
    options: PrepareOptions,
    base: Path,
) -> _RenderedJob:
    """Render every section of ``run``, collecting every problem; raise them all at once,
    located."""
    operation = loaded.operation
    component = operation.component
    connections = options.connections
    globals_ = run_context.globals_dict()
    problems = Problems()
    base_context = build_context(params, globals=globals_)
    raw_init = render_init_list(run, base_context, problems)
    to_init = to_init_entries(component, operation, values)
    conn_run = render_run_connections(run, base_context, problems)
    init_entries = [*to_init, *raw_init]
    names = connection_names(conn_run, [e for e in init_entries if not isinstance(e, str)], params)
    if connections is None:
        connections = load_connections()
    used = [get_connection(connections, name) for name in names]
    conn_env, secret_values = connections_env(used)
    schemas = {conn.name: dict(conn.schema_ or {}) for conn in used}
    context = build_context(params, globals=globals_, connections=schemas)
    container = render_container(run, context, run_context, base, problems)
    init_path = ("component", "run", "init")
    steps = init_steps(init_entries, context, run_context, problems, init_path, len(to_init))
    termination, cache, tags = _run_settings(operation, component, context, problems)
    cache_on = cache_enabled(cache, options.in_pipeline, context, problems)
    if problems.items:
        raise PolyaxonfileError(locate_problems(problems.items, loaded))
    return _RenderedJob(
        conn_run,
        container,
        steps,
        used,
        names,
        conn_env,
        tuple(dict.fromkeys(secret_values)),
        termination,
        cache,
        cache_on,
        tags,
        context,
    )


def _run_settings(
    operation: Any, component: Any, context: Mapping[str, Any], problems: Problems
) -> tuple[Any, Any, tuple[str, ...]]:
    """The rendered ``termination``, ``cache`` and ``tags`` (the operation's over the
    component's)."""
    from polyaxon_prefect.specs._cache import Cache
    from polyaxon_prefect.specs._termination import Termination

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
    return termination, cache, tuple(str(tag) for tag in tags)


def connection_names(run: Any, init: Sequence[Any], params: Mapping[str, ParamValue]) -> list[str]:
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


def _environment(
    component: Any,
    operation: Any,
    values: Mapping[str, Any],
    run_context: RunContext,
    job: _RenderedJob,
) -> dict[str, str]:
    """This process's env, then the run's tracking contract, the container's ``env``, the
    params' ``toEnv`` and the connections' env, each over the ones before."""
    env = dict(os.environ)
    env.update(run_context.env_vars(jsonable_params(set_values(component, values))))
    env.update(job.container.env)
    env.update(params_env(component, operation, values))
    env.update(job.connection_env)
    return env


# --------------------------------------------------------------------------------------------------
# execute_job


def execute_job(
    job: PreparedJob,
    *,
    on_line: Callable[[str, str], None] | None = None,
    cancel_event: threading.Event | None = None,
    launcher: Launcher = PROCESS,
) -> RunResult:
    """Run the init steps and the process of ``job`` (started by ``launcher``, the one it was
    prepared for), then read back its outputs and metrics.

    Never raises for what the job itself did: a failed init step, a command that does not
    exist, a non-zero exit, a timeout or invalid outputs all come back as a `RunResult` with
    status ``failed`` (``stopped`` when ``cancel_event`` was set, ``skipped`` for a build op
    prepared with ``skip_builds``) and a message a user can act on. Secrets are masked in
    every line given to ``on_line`` and in the message; outputs and metrics are the values
    the job produced, unmasked, because they are data for the ops downstream: whoever shows
    them to people masks them (`polyaxon_prefect.runtime.logs._masking.mask_value`).

    Each call is one attempt: outputs left by an earlier attempt in the same run directory are
    removed first, so a retry never reports stale values.
    """
    if job.is_build:
        return RunResult(Status.SKIPPED, message=launcher.skipped_build.format(op=job.op_name))
    try:
        ended = run_one_process(job, launcher, on_line, cancel_event)
    finally:
        launcher.close()
    finish_ttl(job)
    return ended


def run_one_process(
    job: PreparedJob,
    launcher: Launcher,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult:
    """The one-process shape: the run's directories and init steps, the launcher's checks,
    then ``job``'s process to its end and what it left (`job_outcome`)."""
    ended = _before_process(job, on_line, cancel_event)
    if ended is None:
        ended = launcher.ready([job], on_line, cancel_event)
    if ended is not None:
        return ended
    process = launcher.process(Launch(job, job.argv, job.env))
    result = None
    try:
        result = run_process(
            process.argv,
            env=process.env,
            cwd=process.cwd,
            timeout=job.timeout,
            on_line=on_line,
            secrets=job.secrets,
            cancel_event=cancel_event,
            log_path=job.context.run_artifacts_path / "logs" / LOG_FILE,
        )
    except ProcessStartError as exc:
        return failed(str(exc), job.secrets)
    finally:
        process.end(result)
    return job_outcome(job, result)


def _before_process(
    job: PreparedJob,
    on_line: Callable[[str, str], None] | None,
    cancel_event: threading.Event | None,
) -> RunResult | None:
    """Make the run's directories, drop an earlier attempt's outputs and run the init steps;
    the result of a job that ends here (failed, or cancelled), else None."""
    ctx = job.context
    try:
        ctx.make_dirs()
        for name in (OUTPUTS_FILE, METRICS_FILE):
            with contextlib.suppress(FileNotFoundError):
                (ctx.run_outputs_path / name).unlink()
        run_init(job, on_line, cancel_event)
    except InitStepError as exc:
        return failed(str(exc), job.secrets)
    except OSError as exc:
        return failed(f"cannot prepare the run directory: {exc}", job.secrets)
    if cancel_event is not None and cancel_event.is_set():
        return RunResult(Status.STOPPED, message="cancelled before the process started")
    return None
