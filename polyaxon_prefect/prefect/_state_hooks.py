"""Polyaxon ``hooks`` as Prefect state hooks of the op's flow.

A flow whose op has hooks gets one function in each of Prefect's ``on_completion``,
``on_failure``, ``on_cancellation`` and ``on_crashed``: when the flow run reaches its final
state, every hook due for that status (`runtime._due_hooks.hook_due`) runs its hub component as its
own flow run, named ``<op>-hook-<component>``, with the op's context as params. A flow run
started from a deployment gets them the same way, since the flow is built here for both. A hook
that fails is logged on the op's flow run; it never changes the op's own state.

Hooks of a job op *inside* a DAG (a task run, not a flow run) are not run: only flow runs have
state hooks (the top-level op, a DAG, a sweep, a DAG op that is itself a DAG or a sweep).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from polyaxon_prefect.prefect._request import OpRequest
from polyaxon_prefect.runtime._due_hooks import (
    DEFAULT_PARAMS,
    hook_context,
    hook_document,
    hooks_of,
    safe_due,
)
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import context_kind

if TYPE_CHECKING:
    from prefect import Flow
    from prefect.client.schemas.objects import FlowRun, State
    from prefect.flows import FlowStateHook

    from polyaxon_prefect.runtime import Connection
    from polyaxon_prefect.specs import Hook, LoadedPolyaxonfile

__all__ = [
    "HookRunner",
    "StateHooks",
    "deferred_state_hooks",
    "run_due_hooks",
    "state_hooks",
    "track_request",
]

HookRunner = Callable[["LoadedPolyaxonfile", "Mapping[str, Connection] | None"], RunResult]
"""Runs a hook's loaded op with the ended run's connections, as a top-level flow run. The
dispatcher hands it in (`polyaxon_prefect.prefect._dispatch.run_hook_op`), as it hands runners
their `Children`, so this module never imports the dispatcher that imports it."""


class StateHooks(TypedDict, total=False):
    """The ``flow(...)`` keyword arguments that attach state hooks, typed so that
    ``flow(**hooks)`` is checked against Prefect's signature."""

    on_completion: list[FlowStateHook[..., Any]]
    on_failure: list[FlowStateHook[..., Any]]
    on_cancellation: list[FlowStateHook[..., Any]]
    on_crashed: list[FlowStateHook[..., Any]]


_BY_FLOW_RUN: dict[str, tuple[OpRequest, list[RunResult]]] = {}
"""The request each running flow run of a `to_flow` flow runs (its op is known only once the
flow run starts), for `deferred_state_hooks`."""


def track_request(request: OpRequest) -> list[RunResult]:
    """Remember that the current flow run runs ``request``; returns the list its outcome is
    to be appended to (the op's `RunResult`), read by the flow's `deferred_state_hooks`."""
    from prefect.context import FlowRunContext

    outcomes: list[RunResult] = []
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None:
        _BY_FLOW_RUN[str(context.flow_run.id)] = (request, outcomes)
    return outcomes


def deferred_state_hooks(run_hook: HookRunner) -> StateHooks:
    """State hooks for a flow whose op is loaded when it runs (`to_flow`, the deployable
    `polyaxonfile` flow): they run the hooks of the request the flow run tracked, each through
    ``run_hook``."""

    def run_polyaxon_hooks(flow: Flow[..., Any], flow_run: FlowRun, state: State) -> None:
        del flow
        tracked = _BY_FLOW_RUN.pop(str(flow_run.id), None)
        if tracked is not None and hooks_of(tracked[0].operation):
            _run_and_log(flow_run, state, *tracked, run_hook)

    return _on_every_end(run_polyaxon_hooks)


def state_hooks(request: OpRequest, outcomes: list[RunResult], run_hook: HookRunner) -> StateHooks:
    """The ``flow(...)`` keyword arguments that run ``request``'s hooks when its flow run ends
    (none when it has no hooks); ``outcomes`` is filled by the flow with the op's result, and
    each due hook's op runs through ``run_hook``."""
    if not hooks_of(request.operation):
        return {}

    def run_polyaxon_hooks(flow: Flow[..., Any], flow_run: FlowRun, state: State) -> None:
        del flow
        _run_and_log(flow_run, state, request, outcomes, run_hook)

    return _on_every_end(run_polyaxon_hooks)


def _on_every_end(hook: FlowStateHook[..., Any]) -> StateHooks:
    return {
        "on_completion": [hook],
        "on_failure": [hook],
        "on_cancellation": [hook],
        "on_crashed": [hook],
    }


def _run_and_log(
    flow_run: FlowRun,
    state: State,
    request: OpRequest,
    outcomes: list[RunResult],
    run_hook: HookRunner,
) -> None:
    """Run the due hooks of the op that just ended; one log line each on its flow run."""
    from prefect.logging.loggers import flow_run_logger

    logger = flow_run_logger(flow_run)
    result = outcomes[-1] if outcomes else None
    for ok, line in run_due_hooks(request, result, state, run_hook):
        (logger.info if ok else logger.warning)(line)


def _context(request: OpRequest, result: RunResult | None, state: State) -> dict[str, Any]:
    from polyaxon_prefect.prefect._states import polyaxon_status

    operation = request.operation
    prepared = request.prepared
    context = request.run_context or (prepared.context if prepared is not None else None)
    return hook_context(
        uuid=(result.uuid if result is not None else None) or (context.uuid if context else None),
        kind=context_kind(operation),
        name=request.op_name,
        status=str(result.status if result is not None else polyaxon_status(state)),
        message=(result.message if result is not None else "") or (state.message or ""),
        inputs=prepared.params if prepared is not None else dict(request.params or {}),
        outputs=result.outputs if result is not None else {},
    )


def run_due_hooks(
    request: OpRequest, result: RunResult | None, state: State, run_hook: HookRunner
) -> list[tuple[bool, str]]:
    """Run every hook of ``request`` due for how it ended, each through ``run_hook``; per hook,
    whether it went well and a line saying so."""
    context = _context(request, result, state)
    lines: list[tuple[bool, str]] = []
    for hook in hooks_of(request.operation):
        due, problem = safe_due(hook, context)
        if problem is not None:
            lines.append((False, problem))
        if not due:
            continue
        try:
            outcome = _run_hook(request, hook, context, run_hook)
        except Exception as exc:  # a hook never breaks the op it reports on
            lines.append((False, f"hook `{hook.hub_ref}` could not run: {exc}"))
            continue
        text = f"hook `{hook.hub_ref}` {outcome.status}"
        lines.append(
            (outcome.succeeded, text + (f": {outcome.message}" if outcome.message else ""))
        )
    return lines


def _load(
    hook: Hook, context: dict[str, Any], folder: Path, declared: set[str]
) -> LoadedPolyaxonfile:
    import yaml

    from polyaxon_prefect.loading import load_polyaxonfile

    path = folder / "hook.yaml"
    path.write_text(yaml.safe_dump(hook_document(hook, context, declared), sort_keys=False))
    return load_polyaxonfile(path)


def _run_hook(
    request: OpRequest, hook: Hook, context: dict[str, Any], run_hook: HookRunner
) -> RunResult:
    """Load the hook's operation (its defaults as declared params where its component has
    such inputs) and run it through ``run_hook`` as a top-level flow run, in a thread of its
    own so that it is not taken for a subflow of the run that just ended."""

    with tempfile.TemporaryDirectory(prefix="polyaxon-hook-") as tmp:
        folder = Path(tmp)
        loaded = _load(hook, context, folder, set())
        component = loaded.operation.component
        assert component is not None  # a loaded operation has its component inlined
        inputs = {io.name for io in (component.inputs or [])}
        declared = inputs & set(DEFAULT_PARAMS)
        if declared:
            loaded = _load(hook, context, folder, declared)
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = run_hook(loaded, request.connections)
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=work, name="polyaxon-hook")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        result: RunResult = box["result"]
        return result
