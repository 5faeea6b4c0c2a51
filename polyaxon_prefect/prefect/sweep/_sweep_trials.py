"""How a sweep runs one trial: a deployment run on a work pool, a subflow (a DAG trial), or
a job's process in this process recorded as a child flow run (`_trials`).

Apart from the sweep loop, which only decides *when* a trial starts and what its result
means; this decides *where* it runs. `run` is called in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._request import Children, OpRequest
from polyaxon_prefect.prefect.sweep._trials import run_deployment_trial, run_job_trial
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.search._sweep import jsonable
from polyaxon_prefect.specs import Status

if TYPE_CHECKING:
    from polyaxon_prefect.search import Suggestion

__all__ = ["TrialRunner"]


@dataclass
class TrialRunner:
    """Runs the trials of the sweep ``request``; ``in_process``: its trials are jobs run in
    this process. The ids are set once the sweep's flow run has them."""

    request: OpRequest
    children: Children
    in_process: bool
    flow_run_id: UUID | None
    tags: list[str] = field(default_factory=list)
    trial_flow_id: UUID | None = None
    trials_task_run_id: UUID | None = None
    client: Any = None

    def run(
        self,
        trial: OpRequest,
        suggestion: Suggestion,
        run_uuid: str,
        on_result: Callable[[RunResult], None] | None = None,
    ) -> RunResult:
        """In a worker thread (with a copy of the flow's context). ``on_result``: a job
        trial's result as soon as its process ends, before its Prefect records."""
        deployment = self.request.sweep.deployment
        if deployment:
            files = trial.loaded.files
            parameters = {
                "polyaxonfile": _where(files[0]) if files else "",
                "params": jsonable(self._deployment_params(trial)),
                "run_uuid": run_uuid,
                "index": suggestion.index,
            }
            return run_deployment_trial(
                deployment,
                parameters=parameters,
                name=trial.name or "trial",
                idempotency_key=f"{self.flow_run_id}:{suggestion.number}",
                tags=self.tags,
                cancel_event=trial.cancel_event,
            )
        if not self.in_process:
            return self.children.subflow(trial)
        return self._run_job(trial, suggestion, on_result)

    def _deployment_params(self, trial: OpRequest) -> dict[str, Any]:
        """The values the trial's run loads the file with: the file's literal params, the
        overrides and the suggestion (outputs' empty placeholders left out)."""
        component = self.request.operation.component
        outputs = {io.name for io in ((component.outputs if component else None) or [])}
        merged = {**dict(self.request.loaded.params), **dict(trial.params)}
        return {k: v for k, v in merged.items() if not (k in outputs and v is None)}

    def _run_job(
        self,
        trial: OpRequest,
        suggestion: Suggestion,
        on_result: Callable[[RunResult], None] | None,
    ) -> RunResult:
        """Body of the linking task: prepare the job, run it as a child flow run."""
        try:
            job = trial.prepare_job()
        except PolyaxonPrefectError as exc:
            return RunResult(Status.FAILED, message=str(exc))
        assert self.trial_flow_id is not None
        return run_job_trial(
            job,
            flow_id=self.trial_flow_id,
            name=trial.name or job.op_name,
            parameters=jsonable(suggestion.params),
            tags=list(dict.fromkeys([*self.tags, *job.tags])),
            parent_task_run_id=self.trials_task_run_id,
            client=self.client,
            cancel_event=trial.cancel_event,
            on_result=on_result,
        )


def _where(file: str) -> str:
    """Where a trial's run reads the sweep's file: its URL (``run --url``), else its path."""
    return file if "://" in file else str(Path(file).absolute())
