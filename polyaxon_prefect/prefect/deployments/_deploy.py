"""Deployments: any Polyaxonfile as a Prefect deployment with a typed, documented form.

``polyaxon-prefect deploy -f FILE --pool POOL`` creates (or updates) a deployment of the one
generic flow, `polyaxonfile_flow` (``flows/polyaxonfile.py`` re-exports it), whose parameter
schema is the component's inputs (types, defaults, descriptions, required, ``validation``
options and bounds: the schema `to_flow` gives Prefect, plus each input's description) and is
enforced by the server, so a bad ``--param`` is refused before any flow run exists. The
Polyaxonfile itself is not a form field: its path or URL travels in the deployment's job
variables (``env``: ``POLYAXON_PREFECT_FILE``), which every work pool type passes to the flow
run's process, so the form shows only the component's inputs. The file is read at each run.

The Polyaxonfile's ``schedule`` becomes the deployment's (`prefect._deploy_schedules`), and its
``hooks`` run as state hooks of the flow run (`prefect._state_hooks`).

A deployment is named after the operation (its ``name``, else its component's), under the flow
of its component. Its job variables also record which operation it runs (the file and the
operation's name: ``POLYAXON_PREFECT_OPERATION``), so that deploying the same operation again
updates it in place (same id, new form and schedule), while another operation that would take
its name is refused rather than silently replacing its schedule and defaults (``replace``:
``--force``).
"""

from __future__ import annotations

import os
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import Flow, flow
from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.actions import DeploymentScheduleCreate

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._dispatch import run_hook_op

# at run time: Prefect evaluates the flows' annotations below
from polyaxon_prefect.prefect._request import FlowValue
from polyaxon_prefect.prefect._state_hooks import deferred_state_hooks
from polyaxon_prefect.prefect.deployments._deploy_schedules import (
    DeploymentSchedule,
    deployment_schedule,
)

if TYPE_CHECKING:
    from datetime import datetime
    from uuid import UUID

    from polyaxon_prefect.specs import Component, Operation

__all__ = [
    "DEPENDS_ON_PAST_ENV",
    "ENTRYPOINT",
    "FILE_ENV",
    "OPERATION_ENV",
    "PRESETS_ENV",
    "DeployError",
    "Deployed",
    "deploy",
    "deployed_flow",
    "generic_flow",
]

FILE_ENV = "POLYAXON_PREFECT_FILE"
"""The Polyaxonfile (path or http(s) URL) a deployment of `polyaxonfile_flow` runs."""
OPERATION_ENV = "POLYAXON_PREFECT_OPERATION"
"""The name of the operation a deployment runs: with ``FILE_ENV``, what tells a re-deploy of
the same operation (an update) from another operation taking its name (refused)."""
PRESETS_ENV = "POLYAXON_PREFECT_PRESETS"
"""Its presets, ``os.pathsep``-separated."""
DEPENDS_ON_PAST_ENV = "POLYAXON_PREFECT_DEPENDS_ON_PAST"
"""``1``: a run after a failed run of the same deployment ends skipped (``dependsOnPast``)."""
ENTRYPOINT = "polyaxon_prefect.prefect.deployments._deploy.polyaxonfile_flow"
"""A module entrypoint: workers import it from the installed package, from any directory."""


def _local(file: str, folder: Path) -> Path:
    """``file`` as a local path: an http(s) URL is downloaded (again at each run)."""
    if not file.startswith(("http://", "https://")):
        return Path(file)
    target = folder / (Path(file.split("?", 1)[0]).name or "polyaxonfile.yaml")
    with urllib.request.urlopen(file, timeout=30) as response:
        target.write_bytes(response.read())
    return target


def _past_failure() -> str | None:
    """For ``dependsOnPast``: the previous run of this deployment, if it failed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterStartTime,
    )
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    run = context.flow_run if context is not None else None
    if run is None or run.deployment_id is None:
        return None
    with get_client(sync_client=True) as client:
        earlier = client.read_flow_runs(
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[run.deployment_id])),
            flow_run_filter=FlowRunFilter(
                start_time=FlowRunFilterStartTime(is_null_=False, before_=run.start_time)
                if run.start_time
                else None
            ),
            sort=FlowRunSort.START_TIME_DESC,
            limit=5,
        )
    for previous in earlier:
        if previous.id == run.id or previous.state is None or not previous.state.is_final():
            continue
        if previous.state.is_failed() or previous.state.is_crashed():
            return f"the previous run `{previous.name}` ({previous.id}) failed"
        return None
    return None


def _run_generic(
    polyaxonfile: str = "",
    params: dict[str, Any] | None = None,
    restart: dict[str, str] | None = None,
) -> FlowValue:
    """A Polyaxonfile given as a parameter (a deployment made the Prefect way, from a
    ``prefect.yaml`` without ``POLYAXON_PREFECT_FILE``), with its params by input name; or,
    with ``restart: {run: RUN, from: OP}``, run RUN's recorded operation again (``restart
    RUN --from OP`` from the UI; ``from`` optional, ``params`` on top)."""
    from polyaxon_prefect.prefect._api import to_flow
    from polyaxon_prefect.prefect.deployments._flow_signature import python_name

    if restart:
        return _restart_in_flow(restart, params or {})
    if not polyaxonfile:
        raise PolyaxonPrefectError(
            "give `polyaxonfile` (a path or URL), or `restart: {run: RUN, from: OP}`"
        )
    with tempfile.TemporaryDirectory(prefix="polyaxonfile-") as tmp:
        typed = to_flow(_local(polyaxonfile, Path(tmp)))
        return typed.fn(**{python_name(k): v for k, v in (params or {}).items()})


def _restart_in_flow(restart: Mapping[str, Any], params: Mapping[str, Any]) -> FlowValue:
    """``restart: {run, from}`` in the current flow run, as the CLI's ``restart`` runs it."""
    from prefect import get_run_logger

    from polyaxon_prefect.prefect._dispatch import run_request_in_flow
    from polyaxon_prefect.prefect._state_hooks import track_request
    from polyaxon_prefect.prefect.runs._restart import restart_request
    from polyaxon_prefect.runtime import load_connections

    unknown = sorted(set(restart) - {"run", "from"})
    if unknown or not restart.get("run"):
        raise PolyaxonPrefectError(
            f"`restart` takes {{run: RUN, from: OP}} (`from` optional), not {dict(restart)}"
        )
    from_op = restart.get("from")
    request, line = restart_request(
        str(restart["run"]),
        from_op=str(from_op) if from_op else None,
        params=params,
        connections=load_connections(),
    )
    get_run_logger().info(line)
    return run_request_in_flow(request, track_request(request).append, top_level=True)


generic_flow = flow(
    name="polyaxonfile",
    description="Runs the Polyaxonfile given as `polyaxonfile` (a path or URL) with `params`; "
    "or, with `restart: {run: RUN, from: OP}`, runs RUN's recorded operation again.",
    **deferred_state_hooks(run_hook_op),
)(_run_generic)


def deployed_flow() -> Flow[..., FlowValue]:
    """The flow a deployment runs: with ``POLYAXON_PREFECT_FILE`` set (every deployment made by
    `deploy`), the file's own typed flow (`to_flow`: the form's parameters, the component's
    name), guarded by ``dependsOnPast`` when asked; else `generic_flow`."""
    import inspect

    from polyaxon_prefect.prefect._api import to_flow
    from polyaxon_prefect.prefect._states import SKIPPED_STATE_NAME

    file = os.environ.get(FILE_ENV)
    if not file:
        return generic_flow
    folder = Path(tempfile.mkdtemp(prefix="polyaxonfile-"))  # a URL's copy, for this process
    presets = [p for p in os.environ.get(PRESETS_ENV, "").split(os.pathsep) if p]
    typed = to_flow(_local(file, folder), [_local(p, folder) for p in presets])
    if os.environ.get(DEPENDS_ON_PAST_ENV) != "1":
        return typed

    def guarded(**values: object) -> FlowValue:
        failed = _past_failure()
        if failed is not None:
            from prefect.states import Completed

            return Completed(name=SKIPPED_STATE_NAME, message=f"dependsOnPast: {failed}")
        return typed.fn(**values)

    guarded.__signature__ = inspect.signature(typed.fn)  # type: ignore[attr-defined]
    guarded.__annotations__ = dict(typed.fn.__annotations__)
    return flow(
        name=typed.name,
        flow_run_name=typed.flow_run_name,
        description=typed.description,
        **deferred_state_hooks(run_hook_op),
    )(guarded)


def __getattr__(name: str) -> Flow[..., FlowValue]:
    """``polyaxonfile_flow``, the deployments' entrypoint, is built when a worker's process
    imports it, from that process's ``POLYAXON_PREFECT_FILE`` (`deployed_flow`)."""
    if name == "polyaxonfile_flow":
        return deployed_flow()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DeployError(PolyaxonPrefectError):
    """The deployment cannot be made: its work pool does not exist, or no server answers."""


def _check_pool(client: SyncPrefectClient, pool: str) -> None:
    """The work pool must exist before a deployment names it (Prefect's 404 says less)."""
    import httpx
    from prefect.exceptions import ObjectNotFound

    try:
        client.read_work_pool(pool)
    except ObjectNotFound:
        raise DeployError(
            f"work pool `{pool}` does not exist on {client.api_url}; create it first: "
            f"`prefect work-pool create {pool} --type process` (or `--type kubernetes` with "
            "--base-job-template deployments/kubernetes/base-job-template.json)"
        ) from None
    except httpx.HTTPError as exc:
        raise DeployError(
            f"no Prefect server answers at {client.api_url} ({exc}); start one with "
            "`polyaxon-prefect server start` or set PREFECT_API_URL"
        ) from None


@dataclass(frozen=True)
class Deployed:
    """What `deploy` made: ``FLOW/NAME`` (for ``prefect deployment run``), its id and
    schedule, what of the Polyaxonfile it could not express, and what happened to the name:
    ``created``, ``updated`` (the same operation, deployed again) or ``replaced`` (another
    deployment's, with ``replace``; ``previous`` says whose)."""

    full_name: str
    deployment_id: str
    schedule: DeploymentSchedule | None
    warnings: tuple[str, ...]
    action: str = "created"
    previous: str | None = None


def _owner(env: Mapping[str, Any]) -> str:
    """Who a deployment runs, in words, from its job variables' ``env``."""
    file = env.get(FILE_ENV)
    if not file:
        return "a deployment not made by `polyaxon-prefect deploy`"
    operation = env.get(OPERATION_ENV)
    return f"operation `{operation}` of {file}" if operation else f"the operation of {file}"


def _claim(
    client: SyncPrefectClient, full_name: str, ours: Mapping[str, str], replace: bool
) -> Deployed:
    """Whether ``full_name`` is free (created), already ours (updated: the same file and
    operation, or the same file deployed before operations were recorded), or another's:
    refused, unless ``replace``. Only the action and the previous owner are filled in."""
    from prefect.exceptions import ObjectNotFound

    try:
        existing = client.read_deployment_by_name(full_name)
    except ObjectNotFound:
        return Deployed(full_name, "", None, ())
    theirs = dict((existing.job_variables or {}).get("env") or {})
    same_file = theirs.get(FILE_ENV) == ours[FILE_ENV]
    same_operation = theirs.get(OPERATION_ENV, ours[OPERATION_ENV]) == ours[OPERATION_ENV]
    if same_file and same_operation:
        return Deployed(full_name, str(existing.id), None, (), "updated")
    if not replace:
        raise DeployError(
            f"deployment `{full_name}` already runs {_owner(theirs)}, not {_owner(ours)}; "
            "nothing was changed: pick another name with `--name NEW`, or replace it with "
            "`--force`"
        )
    return Deployed(full_name, str(existing.id), None, (), "replaced", _owner(theirs))


def _schema(typed: Flow[..., FlowValue], component: Component | None) -> dict[str, Any]:
    """The typed flow's parameter schema, each input's ``description`` added."""
    from polyaxon_prefect.prefect.deployments._flow_signature import python_name

    schema: dict[str, Any] = typed.parameters.model_dump_for_openapi()
    properties = schema.get("properties", {})
    for io in (component.inputs if component is not None else None) or []:
        prop = properties.get(python_name(io.name))
        if prop is not None and io.description:
            prop["description"] = str(io.description)
    return schema


def _prefect_schedules(planned: DeploymentSchedule) -> list[DeploymentScheduleCreate]:
    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import construct_schedule

    spec = planned.schedule
    if spec is None:
        return []
    if "rrule" in spec:
        from prefect.client.schemas.schedules import RRuleSchedule

        return [DeploymentScheduleCreate(schedule=RRuleSchedule(rrule=spec["rrule"]))]
    if "cron" in spec:
        return [DeploymentScheduleCreate(schedule=construct_schedule(cron=spec["cron"]))]
    return [
        DeploymentScheduleCreate(
            schedule=construct_schedule(
                interval=spec["interval"], anchor_date=spec.get("anchor_date")
            )
        )
    ]


def _operation(local: Path, presets: Sequence[Path], params: Mapping[str, Any]) -> Operation:
    """The file's operation, every problem raised, except a required input without a value
    (the form asks for it)."""
    from polyaxon_prefect.exceptions import PolyaxonfileError
    from polyaxon_prefect.loading import load_operation_for_signature, load_polyaxonfile

    try:
        return load_polyaxonfile(local, presets, dict(params)).operation
    except PolyaxonfileError as error:
        if not error.problems or any(p.rule != "param_missing" for p in error.problems):
            raise
    return load_operation_for_signature(local, presets)


def _defaults(typed: Flow[..., FlowValue], params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``-P`` values as the form's defaults, typed as the form's fields (a string
    ``"3"`` for an int input is 3)."""
    import inspect

    from pydantic import TypeAdapter

    from polyaxon_prefect.prefect.deployments._flow_signature import python_name

    fields = inspect.signature(typed.fn).parameters
    defaults: dict[str, Any] = {}
    for key, value in params.items():
        name = python_name(key)
        annotation = fields[name].annotation if name in fields else Any
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        defaults[name] = adapter.dump_python(adapter.validate_python(value), mode="json")
    return defaults


def _read(
    file: str, presets: Sequence[str], params: Mapping[str, Any] | None
) -> tuple[Operation, dict[str, Any], dict[str, Any], dict[str, str]]:
    """The file's operation (its problems raise here), its form's schema and defaults, and
    the env that names it to the flow run (absolute paths; URLs as given)."""
    from polyaxon_prefect.prefect._api import to_flow

    def where(name: str) -> str:
        remote = name.startswith(("http://", "https://"))
        return name if remote else str(Path(name).absolute())

    with tempfile.TemporaryDirectory(prefix="polyaxonfile-") as tmp:
        folder = Path(tmp)
        local = _local(file, folder)
        preset_files = [_local(p, folder) for p in presets]
        operation = _operation(local, preset_files, params or {})
        typed = to_flow(local, preset_files)
        schema = _schema(typed, operation.component)
        defaults = _defaults(typed, params or {})
    env = {FILE_ENV: where(file)}
    if presets:
        env[PRESETS_ENV] = os.pathsep.join(where(p) for p in presets)
    return operation, schema, defaults, env


def deploy(
    file: str,
    presets: Sequence[str] = (),
    *,
    pool: str,
    name: str | None = None,
    tags: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    job_variables: Mapping[str, Any] | None = None,
    replace: bool = False,
) -> Deployed:
    """Create or update the deployment of ``file`` on work pool ``pool`` (see the module).

    Its name is ``name``, else the operation's, else the component's. ``params`` (``-P``
    values) become the form's defaults; ``job_variables`` are the pool's (its ``env`` merged
    with the file's). ``replace``: take the name even from another operation's deployment.

    Raises:
        PolyaxonfileError: the file, a preset or a param is invalid (nothing is deployed).
        DeployError: no pool, no server, or the name is another operation's (nothing is
            deployed).
    """
    from prefect.client.orchestration import get_client

    from polyaxon_prefect.prefect._job_flow import flow_name

    operation, schema, defaults, env = _read(file, presets, params)
    component = operation.component
    assert component is not None  # a loaded operation has its component inlined
    operation_name = operation.name or component.name or Path(env[FILE_ENV]).stem
    env[OPERATION_ENV] = str(operation_name)
    planned = deployment_schedule(operation.schedule) if operation.schedule else None
    one_at_a_time = planned is not None and planned.one_at_a_time
    if one_at_a_time:
        env[DEPENDS_ON_PAST_ENV] = "1"
    variables = dict(job_variables or {})
    variables["env"] = {**dict(variables.get("env") or {}), **env}
    flow_title = flow_name(component.name or Path(env[FILE_ENV]).stem)
    deployment_name = name or flow_name(str(operation_name))
    full_name = f"{flow_title}/{deployment_name}"
    with get_client(sync_client=True) as client:
        _check_pool(client, pool)
        claim = _claim(client, full_name, env, replace)
        deployment_id = client.create_deployment(
            client.create_flow_from_name(flow_title),
            deployment_name,
            entrypoint=ENTRYPOINT,
            work_pool_name=pool,
            parameters=defaults,
            parameter_openapi_schema=schema,
            enforce_parameter_schema=True,
            job_variables=variables,
            tags=[*(component.tags or []), *tags],
            description=component.description,
            schedules=_prefect_schedules(planned) if planned is not None else [],
            **_concurrency(one_at_a_time),
        )
        if planned is not None and planned.run_at is not None:
            _schedule_once(client, deployment_id, planned.run_at)
    return Deployed(
        full_name,
        str(deployment_id),
        planned,
        tuple(planned.warnings) if planned is not None else (),
        claim.action,
        claim.previous,
    )


def _schedule_once(client: SyncPrefectClient, deployment_id: UUID, run_at: datetime) -> None:
    """A ``datetime`` schedule's one flow run, unless the deployment already has a run at that
    time, waiting or done (deploying the same operation again must not run it twice)."""
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterExpectedStartTime,
    )
    from prefect.states import Scheduled

    existing = client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
        flow_run_filter=FlowRunFilter(
            expected_start_time=FlowRunFilterExpectedStartTime(after_=run_at, before_=run_at)
        ),
        limit=1,
    )
    if not existing:
        client.create_flow_run_from_deployment(
            deployment_id, state=Scheduled(scheduled_time=run_at)
        )


def _concurrency(one_at_a_time: bool) -> dict[str, Any]:
    """``dependsOnPast``'s one run at a time, queued (a deployment's concurrency limit)."""
    from prefect.client.schemas.objects import ConcurrencyLimitStrategy, ConcurrencyOptions

    if not one_at_a_time:
        return {"concurrency_limit": None, "concurrency_options": None}
    return {
        "concurrency_limit": 1,
        "concurrency_options": ConcurrencyOptions(
            collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
        ),
    }
