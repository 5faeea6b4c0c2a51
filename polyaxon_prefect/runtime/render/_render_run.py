"""The one render pass: a loaded op's run section becomes the whole prepared run, at once.

`render_run` reads the op's params once (`run_params`), resolves its connections once, renders
each section once with one context (container, ``init``, ``termination``, ``cache``, ``tags``),
collects every template problem of every section and raises them together, located; then it
makes the run's env, secrets and cache key. Every single-container shape (a job, each replica
of a distributed run, a service) is prepared by it; nothing here runs a process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.loading import build_context
from polyaxon_prefect.runtime._context import new_run_context
from polyaxon_prefect.runtime._prepared import InitStep, PreparedJob
from polyaxon_prefect.runtime.cache._cache_key import cache_enabled, cache_key
from polyaxon_prefect.runtime.cache._code_hash import op_code
from polyaxon_prefect.runtime.cache._code_rules import key_with_code
from polyaxon_prefect.runtime.docker._build_ops import check_build
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
from polyaxon_prefect.runtime.render._connections import UsedConnections, use_connections
from polyaxon_prefect.runtime.render._init_steps import init_entries, init_steps
from polyaxon_prefect.runtime.render._locate import locate_problems
from polyaxon_prefect.runtime.render._options import PrepareOptions
from polyaxon_prefect.runtime.render._param_values import run_params
from polyaxon_prefect.runtime.render._problem_collector import Problems
from polyaxon_prefect.runtime.render._render_sections import (
    render_container,
    render_run_connections,
    render_settings,
)
from polyaxon_prefect.specs import InitSource

if TYPE_CHECKING:
    from polyaxon_prefect.loading import LoadedPolyaxonfile
    from polyaxon_prefect.specs import Component, Operation

__all__ = ["component_of", "render_run"]

_INIT_PATH = ("component", "run", "init")


def render_run(loaded: LoadedPolyaxonfile, options: PrepareOptions, run: Any = None) -> PreparedJob:
    """Prepare ``run`` (default: the component's run, with the GPUs its container asks for),
    one container, as a local process: the step every single-container kind shares, whatever
    its kind (a job, each replica of a distributed run, a server).

    Raises:
        PolyaxonfileError: bad or missing params, template errors (every one, located).
        UnsupportedFeatureError: an init source that cannot run locally.
        BuildNotSupportedError: a build op without ``skip_builds``.
        UnknownConnectionError: a connection name the connections file does not define.
        ConnectionsError: a connection's local secret/config map is missing.
        NotEnoughGpusError: more GPUs asked for than this machine has.
    """
    operation = loaded.operation
    component = component_of(operation)
    base = _base_dir(loaded, options.base_dir)
    op_name = operation.name or component.name or "job"
    run_context = options.run_context
    if run_context is None:  # directories are made by execute_job, not for a failed prepare
        run_context = new_run_context(op_name)
    globals_ = run_context.globals_dict()
    given: frozenset[str] = getattr(loaded, "given_params", frozenset())
    params = run_params(
        component,
        operation,
        getattr(loaded, "params", {}) or {},
        options.params or {},
        globals_,
        given,
    )
    whole_run = run is None  # not one replica's section: the op's GPUs are its container's
    run = run if run is not None else component.run

    # every section with one context; each problem is collected, all raised together
    problems = Problems()
    base_context = build_context(params.typed, globals=globals_)
    entries, to_init = init_entries(
        run, component, operation, params.values, base_context, problems
    )
    conn_run = render_run_connections(run, base_context, problems)
    names = [
        *(conn_run.connections or []),
        *(entry.connection for entry in entries if getattr(entry, "connection", None)),
        *(param.connection for param in params.typed.values() if param.connection),
    ]
    names = list(dict.fromkeys(names))  # the run's, its init entries', its params'; each once
    connections = use_connections(options.connections, names)
    context = build_context(params.typed, globals=globals_, connections=connections.schemas)
    container = render_container(run, context, run_context, base, problems)
    steps = init_steps(entries, context, run_context, problems, _INIT_PATH, to_init)
    settings = render_settings(operation, component, context, problems)
    cache_on = cache_enabled(settings.cache, options.in_pipeline, context, problems)
    if problems.items:
        raise PolyaxonfileError(locate_problems(problems.items, loaded))

    is_build, notes = check_build(operation, component, steps, op_name, options.skip_builds)
    secrets = _secrets(connections, steps, params.passed, options.secrets)
    # this process's env, then the run's tracking contract, the container's ``env``, the
    # params' ``toEnv`` and the connections' env, each over the ones before
    env = {
        **os.environ,
        **run_context.env_vars(params.passed),
        **container.env,
        **params.env,
        **connections.env,
    }
    env.update(compat_env(container.argv, env, [io.name for io in component.outputs or []]))
    key = (
        cache_key(
            component=component,
            cache=settings.cache,
            values=params.values,
            run=conn_run,
            connection_names=names,
            context=run_context,
        )
        if cache_on
        else None
    )
    code_hash = None
    if key is not None or options.in_pipeline:  # a DAG op's hash also decides a restart's reuse
        code = op_code(container.cwd, container.argv, env, steps, base, run_context.artifacts_root)
        code_hash = code.digest
        if key is not None and code.digest is None:
            notes.append(f"op `{op_name}` {code.reason}")
        key = key_with_code(key, code.digest) if key is not None and code.digest else None
    gpus: tuple[int, ...] = ()
    if whole_run:
        container_spec = getattr(run, "container", None)
        gpus = (container_gpu_request(container_spec, context, RESOURCES, loaded),)
        check_gpu_capacity(gpus, RESOURCES, loaded)
    timeout = getattr(settings.termination, "timeout", None)
    return PreparedJob(
        op_name=op_name,
        argv=container.argv,
        env=env,
        cwd=container.cwd,
        image=container.image,
        secrets=secrets,
        timeout=float(timeout) if timeout is not None else None,
        max_retries=int(getattr(settings.termination, "max_retries", None) or 0),
        ttl=getattr(settings.termination, "ttl", None),
        cache_key=key,
        cache_ttl=getattr(settings.cache, "ttl", None) if cache_on else None,
        params=mask_value(params.passed, secrets),
        outputs=list(component.outputs or []),
        context=run_context,
        is_build=is_build,
        tags=settings.tags,
        init=tuple(steps),
        base_dir=base,
        notes=tuple(notes),
        code_hash=code_hash,
        gpu_requests=gpus,
    )


def _secrets(
    connections: UsedConnections,
    steps: Sequence[InitStep],
    passed: Mapping[str, Any],
    run_secrets: tuple[str, ...],
) -> tuple[str, ...]:
    """The connections' secrets and the credentials written into a URL (the URLs each init
    source's model names in `InitSource.CREDENTIAL_URLS`, a connection's, a param's), with
    those of the run it is part of (``run_secrets``: a secret follows its value from op to
    op), remembered so this process masks them wherever they appear."""
    secrets = with_url_credentials(
        tuple(dict.fromkeys([*connections.secrets, *run_secrets])),
        [url for step in steps for url in _credential_urls(step.spec)],
        [dict(conn.schema_ or {}) for conn in connections.used],
        dict(passed),
    )
    remember_secrets(secrets)
    return secrets


def _credential_urls(spec: object) -> list[str]:
    return spec.credential_urls() if isinstance(spec, InitSource) else []


def component_of(operation: Operation) -> Component:
    if operation.component is None:
        raise PolyaxonfileError(
            [Problem("the operation has no component to run", rule="no_component")]
        )
    return operation.component


def _base_dir(loaded: LoadedPolyaxonfile, base_dir: Path | None) -> Path:
    if base_dir is not None:
        return Path(base_dir).absolute()
    files = getattr(loaded, "files", ()) or ()
    if files and "://" not in str(files[0]):  # a file read from a URL: the current directory
        return Path(files[0]).absolute().parent
    return Path.cwd()
