"""``trial_flow``: one trial of a sweep as a deployable flow (``flows/trial.py``).

A sweep run with ``--deployment polyaxon-trial/<deployment>`` creates one run of this flow per
trial, on the deployment's work pool, with the Polyaxonfile's path and the trial's params.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State, StateType

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.prefect._dispatch import run_request_in_flow
from polyaxon_prefect.prefect._request import OpRequest
from polyaxon_prefect.prefect.sweep._trials import TRIAL_FLOW_NAME
from polyaxon_prefect.runtime import project_name
from polyaxon_prefect.runtime._context import new_run_context
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.search._sweep import trial_loaded
from polyaxon_prefect.specs import Status

__all__ = ["trial_flow"]


@flow(name=TRIAL_FLOW_NAME, persist_result=True, validate_parameters=True)
def trial_flow(
    polyaxonfile: str,
    params: dict[str, Any] | None = None,
    presets: list[str] | None = None,
    run_uuid: str | None = None,
    index: int | None = None,
) -> dict[str, Any]:
    """One trial of a sweep, as a deployable flow: the Polyaxonfile's op (its matrix dropped)
    with ``params`` (the suggestion). Returns ``{"status", "outputs", "metrics", "uuid",
    "message"}`` (persisted, so the sweep reads it from another machine with shared result
    storage); the run's own state is the trial's."""
    values = dict(params or {})
    loaded = load_polyaxonfile(Path(polyaxonfile), list(presets or []))
    loaded = trial_loaded(loaded, values)
    name = f"{loaded.operation.name or loaded.component.name or 'op'}-trial"
    context = new_run_context(name, project_name(), run_uuid=run_uuid, iteration=index).make_dirs()
    outcomes: list[RunResult] = []
    request = OpRequest(loaded=loaded, params=values, run_context=context, in_pipeline=True)
    returned = run_request_in_flow(request, outcomes.append)
    outcome = (
        outcomes[-1] if outcomes else RunResult(Status.FAILED, message="the trial did not run")
    )
    payload = {
        "status": outcome.status,
        "outputs": dict(outcome.outputs),
        "metrics": dict(outcome.metrics),
        "uuid": outcome.uuid,
        "message": outcome.message,
    }
    get_run_logger().info("trial %s: %s", index, outcome.status)
    if isinstance(returned, State) and returned.type != StateType.COMPLETED:
        return returned  # type: ignore[return-value]
    return payload
