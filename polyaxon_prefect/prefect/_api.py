"""``polyaxon_prefect.run`` and ``polyaxon_prefect.to_flow``: a Polyaxonfile as a Prefect flow.

``run`` is for "run this file now" (the CLI, notebooks, scripts): the file is loaded and the job
prepared *before* any flow run exists, so a bad file or a missing param is a
`PolyaxonfileError` with located problems, not a failed run in the UI. ``to_flow`` is for
Prefect users: a flow whose parameters are the component's inputs, to call, serve or deploy; it
loads the file again on each run, with that run's parameter values.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import LoadedPolyaxonfile, load_polyaxonfile
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.render._connections import Connection, load_connections
from polyaxon_prefect.runtime.session._session import current_session

if TYPE_CHECKING:
    from prefect import Flow

    from polyaxon_prefect.prefect._request import FlowValue, SweepOptions
    from polyaxon_prefect.specs import Operation

__all__ = ["RunResult", "run", "run_loaded", "to_flow"]

ConnectionsArg = str | os.PathLike[str] | Mapping[str, Connection] | None


def _connections(value: ConnectionsArg) -> dict[str, Connection]:
    if isinstance(value, Mapping):
        return dict(value)
    return load_connections(value)


def run(
    path: str | os.PathLike[str],
    params: Mapping[str, Any] | None = None,
    presets: Sequence[str | os.PathLike[str]] = (),
    *,
    skip_builds: bool = False,
    connections: ConnectionsArg = None,
    hub_dirs: Sequence[str | os.PathLike[str]] = (),
    resume: bool = False,
    storage: str | None = None,
    deployment: str | None = None,
    backend: str = "local",
    cache: bool = True,
) -> RunResult:
    """Run a Polyaxonfile (a job, a DAG, or an op with a matrix) as a Prefect flow run
    (ephemeral server unless ``PREFECT_API_URL`` is set) and return how it ended; never raises
    for a failed run.

    ``params`` are Python values or ``-P``-style strings, typed by the inputs' declared types.
    ``connections`` is a connections file, a mapping of `Connection`, or ``None`` for
    ``$POLYAXON_PREFECT_CONNECTIONS``. For a matrix: ``resume`` continues the latest sweep of
    this op, ``storage`` is the Optuna storage (URL or file; default: a local file) and
    ``deployment`` (``flow/deployment``) runs each trial as a run of that deployment.
    ``backend`` is where jobs and replicas run (``local`` processes; a backend with no executor
    for a kind is refused before anything runs). ``cache=False`` (the CLI's ``--no-cache``):
    no op is served from the op cache; successes are still recorded for later runs.

    Raises:
        PolyaxonfileError: the file, a preset or a param is invalid (before anything runs);
            `UnsupportedFeatureError` for operations the local runtime cannot run (a build
            without ``skip_builds``).
    """
    loaded = load_polyaxonfile(path, list(presets), params, hub_dirs=list(hub_dirs))
    return run_loaded(
        loaded,
        connections=connections,
        skip_builds=skip_builds,
        sweep=_sweep_options(resume, storage, deployment),
        backend=backend,
        cache=cache,
    )


def _notify(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _sweep_options(resume: bool, storage: str | None, deployment: str | None) -> SweepOptions:
    from polyaxon_prefect.prefect._request import SweepOptions

    return SweepOptions(resume=resume, storage=storage, deployment=deployment)


def run_loaded(
    loaded: LoadedPolyaxonfile,
    *,
    connections: ConnectionsArg = None,
    skip_builds: bool = False,
    sweep: SweepOptions | None = None,
    backend: str = "local",
    cache: bool = True,
) -> RunResult:
    """Run an already loaded Polyaxonfile of any kind (see `run`).

    A job is prepared first, so its problems raise before any flow run exists; DAGs and sweeps
    prepare each child when it starts (a child's bad param fails that child, not the load).
    """
    from polyaxon_prefect.prefect._dispatch import run_request
    from polyaxon_prefect.prefect._request import OpRequest, SweepOptions
    from polyaxon_prefect.prefect.server._connect import connect

    current_session()  # before a server starts, so that it inherits the session
    request = OpRequest(
        loaded=loaded,
        connections=_connections(connections),
        skip_builds=skip_builds,
        sweep=sweep or SweepOptions(),
        backend=backend,
        use_cache=cache,
    )
    connection = connect(_notify)  # the shared server, as the CLI's
    try:
        component = loaded.component
        return run_request(request, flow_name=component.name if component is not None else None)
    finally:
        connection.close()


# ----------------------------------------------------------------------------- to_flow


def _load_for_signature(
    path: Path, presets: Sequence[Path], hub_dirs: Sequence[Path]
) -> tuple[Operation, dict[str, Any]]:
    """The operation and its literal params, without requiring every param.

    A component with a required input cannot be loaded without a value for it, yet that input
    is exactly what the flow's parameter will provide; so when the only problems are missing
    params, the file is assembled and validated again without the param check.
    """
    try:
        loaded = load_polyaxonfile(path, presets, hub_dirs=hub_dirs)
        return loaded.operation, loaded.params
    except PolyaxonfileError as error:
        if not error.problems or any(p.rule != "param_missing" for p in error.problems):
            raise
    from polyaxon_prefect.loading import load_operation_for_signature

    operation = load_operation_for_signature(path, presets, hub_dirs=hub_dirs)
    literal = {
        name: param.value
        for name, param in (operation.params or {}).items()
        if not getattr(param, "is_ref", False)
    }
    return operation, literal


def to_flow(
    path: str | os.PathLike[str],
    presets: Sequence[str | os.PathLike[str]] = (),
    *,
    hub_dirs: Sequence[str | os.PathLike[str]] = (),
    connections: ConnectionsArg = None,
    skip_builds: bool = False,
) -> Flow[..., FlowValue]:
    """A Prefect flow for a Polyaxonfile (a job, a DAG or a sweep), with the component's inputs
    as typed parameters.

    ``to_flow("typed.yaml")(learning_rate=0.01, epochs=3)`` runs it and returns its outputs;
    ``flow.parameters`` is the typed schema Prefect's UI renders; ``.serve()``/``.deploy()``
    work as for any flow. The file is read again at each run (so edits apply); connections given
    as a file or ``None`` are read at each run too.

    Raises:
        PolyaxonfileError: the file is invalid (problems other than missing params).
    """
    from prefect import flow

    from polyaxon_prefect.prefect._dispatch import run_hook_op, run_request_in_flow
    from polyaxon_prefect.prefect._job_flow import flow_name
    from polyaxon_prefect.prefect._request import OpRequest
    from polyaxon_prefect.prefect._state_hooks import (
        StateHooks,
        deferred_state_hooks,
        track_request,
    )
    from polyaxon_prefect.prefect.deployments._flow_signature import flow_params, flow_signature
    from polyaxon_prefect.prefect.server._connect import configured_api_url, connect, idle_timeout
    from polyaxon_prefect.runtime._due_hooks import hooks_of

    if configured_api_url() is None and idle_timeout() > 0:
        connect(_notify)  # calls, serve() and deploy() all reach the shared server
    file = Path(path).absolute()
    preset_files = [Path(p).absolute() for p in presets]
    hubs = [Path(h).absolute() for h in hub_dirs]
    operation, literal_params = _load_for_signature(file, preset_files, hubs)
    component = operation.component
    params = flow_params(component, literal_params)
    by_name = {p.name: p for p in params}

    def polyaxon_op(**values: object) -> FlowValue:
        given = {
            by_name[key].io_name: value
            for key, value in values.items()
            if key in by_name and not _is_default(value, by_name[key].default)
        }
        loaded: LoadedPolyaxonfile = load_polyaxonfile(file, preset_files, given, hub_dirs=hubs)
        request = OpRequest(
            loaded=loaded,
            connections=_connections(connections),
            skip_builds=skip_builds,
            backend=env_backend(),
        )
        return run_request_in_flow(request, track_request(request).append, top_level=True)

    signature = flow_signature(params)
    polyaxon_op.__signature__ = signature  # type: ignore[attr-defined]
    polyaxon_op.__annotations__ = {
        **{p.name: p.annotation for p in signature.parameters.values()},
        "return": Any,
    }
    name = getattr(component, "name", None) or file.stem
    hooks: StateHooks = deferred_state_hooks(run_hook_op) if hooks_of(operation) else {}
    return flow(
        name=flow_name(name),
        flow_run_name=flow_name(operation.name or name),
        description=getattr(component, "description", None) or f"Polyaxon component `{name}`",
        **hooks,  # Polyaxon `hooks`
    )(polyaxon_op)


BACKEND_ENV = "POLYAXON_PREFECT_BACKEND"
"""Where a `to_flow` flow's distributed ops run (``local``, ``kubeflow``, ``native``): set in a
deployment's job variables (``polyaxon-prefect deploy --backend``)."""


def env_backend() -> str:
    """``POLYAXON_PREFECT_BACKEND``, else ``local``.

    Raises:
        ValueError: it names no backend.
    """
    from polyaxon_prefect.specs import BACKENDS

    backend = os.environ.get(BACKEND_ENV) or "local"
    if backend not in BACKENDS:
        raise ValueError(f"{BACKEND_ENV}={backend!r} is not one of {', '.join(BACKENDS)}")
    return backend


def _is_default(value: object, default: object) -> bool:
    """Whether a parameter still holds its declared default (then the file's value applies,
    which matters for ``{{ }}`` defaults that must be rendered, not passed back as text)."""
    try:
        return type(value) is type(default) and value == default
    except Exception:
        return False
