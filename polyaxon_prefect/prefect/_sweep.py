"""A matrix operation as a sweep: the current flow run asks, launches, watches and tells.

The parent flow run is the sweep. Its state is one Optuna study (`SweepStudy`: a local SQLite
file by default, any Optuna storage URL with ``--storage``), so everything a sweep knows
survives its process: ``run --resume`` reopens the latest study of the same op, fails and
re-queues the trials a killed parent left running, and never re-runs a completed one.

The loop (all study calls happen in the flow's own thread; trials run in a thread pool)::

    while not finished:
        launch asked suggestions while fewer than `concurrency` trials are in flight
        wait for a trial to finish (or 0.25 s), feed the intermediate metrics of the running
            ones to the pruner (a pruned trial is cancelled: it ends `stopped`)
        tell the study each result; check early stopping (metric threshold or failure share:
            stop launching, cancel the trials in flight)
        iterative kind: when every suggestion has finished, run the tuner op for the next ones

Each trial is a child flow run named ``trial-<index> <param>=<value> ...``; see `_trials`
for how it runs (a job's process in this process, a DAG as a subflow, or a deployment run on
a work pool).

How the sweep ends (its flow run state follows: Completed, Failed, Cancelled):

- early stopping decided: the decision's status (``succeeded`` when a metric reached its
  target, ``failed`` when the failed share reached ``percent``) with its reason; the trials
  still in flight end ``stopped`` and the queued ones never start;
- otherwise ``failed`` when any trial failed (after its retries), else ``succeeded``; trials
  pruned by a stopping policy end ``stopped`` and do not fail the sweep.

The UI gets a progress artifact (trials done / total, updated in place), a leaderboard table
(best first by the matrix metric, with params) and a markdown summary of the best trial.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
import math
import re
import secrets
import tempfile
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.states import Completed, Failed

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.loading._load import LoadedPolyaxonfile
from polyaxon_prefect.prefect._job import OpOutcome, OutcomeCallback, flow_name, state_for_status
from polyaxon_prefect.prefect._trials import (
    TrialResult,
    run_deployment_trial,
    run_job_trial,
    run_subflow_trial,
)
from polyaxon_prefect.runtime._context import create_run_context
from polyaxon_prefect.runtime._kind import op_kind
from polyaxon_prefect.runtime._masking import mask_value
from polyaxon_prefect.runtime._session import stop_reason, stop_requested
from polyaxon_prefect.search._stopping import RunSummary, check_early_stopping
from polyaxon_prefect.specs._params import Param
from polyaxon_prefect.tracking import METRICS_FILE

if TYPE_CHECKING:
    from polyaxon_prefect.prefect._dispatch import OpRequest
    from polyaxon_prefect.search._study import Suggestion, SweepStudy, TrialRecord

__all__ = ["run_sweep_in_flow", "study_prefix", "trial_loaded", "trial_name"]

_POLL_SECONDS = 0.25
_PROGRESS_EVERY_SECONDS = 0.5
_LEADERBOARD_ROWS = 50
_UNLIMITED_THREADS = 256
_DONE = frozenset({"succeeded", "failed", "stopped", "skipped", "upstream_failed"})


# ----------------------------------------------------------------------------- names


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "op"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def study_prefix(request: OpRequest) -> str:
    """``<op>-<hash>``: the same op with the same params always gets the same prefix, so
    ``--resume`` finds the sweep it continues (the newest study with that prefix)."""
    operation = request.operation
    blob = json.dumps(
        {
            "op": operation.model_dump(mode="json", by_alias=True, exclude_none=True),
            "params": _jsonable(dict(request.loaded.params)),
            "overrides": _jsonable(dict(request.params)),
        },
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:10]
    return f"{_slug(request.op_name)}-{digest}"


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def trial_name(index: int, params: dict[str, Any]) -> str:
    """``trial-7 lr=0.01 dropout=0.25`` (values shortened, the whole name kept readable)."""
    shown = " ".join(f"{k}={_format_value(v)}" for k, v in params.items())
    name = f"trial-{index} {shown}".strip()
    return name if len(name) <= 120 else name[:117] + "..."


def trial_loaded(loaded: LoadedPolyaxonfile, params: dict[str, Any]) -> LoadedPolyaxonfile:
    """The op one trial runs: the matrix removed, and the suggestion's keys that are not
    inputs of the component declared as ``contextOnly`` params (as Polyaxon does), so they
    reach templates without being matched against the component's inputs."""
    operation = loaded.operation
    component = operation.component
    op_params = dict(operation.params or {})
    for name in params:
        if component.get_io(name) is None and name not in op_params:
            op_params[name] = Param(value=None, context_only=True)
    update: dict[str, Any] = {"matrix": None}
    if op_params:
        update["params"] = op_params
    return dataclasses.replace(loaded, operation=operation.model_copy(update=update))


# ----------------------------------------------------------------------------- the sweep


@dataclass
class _Flight:
    """A trial in flight."""

    suggestion: Suggestion
    cancel: threading.Event
    metrics_path: Path | None
    offset: int = 0
    pruned: bool = False


class _Sweep:
    def __init__(self, request: OpRequest) -> None:
        self.request = request
        self.operation = request.operation
        self.matrix = self.operation.matrix
        self.component = self.operation.component
        self.logger = get_run_logger()
        self.kind = op_kind(trial_loaded(request.loaded, {}).operation)
        self.policies = list(self.matrix.early_stopping or [])
        self.prune_metric = next(
            (
                p.metric
                for p in self.policies
                if p.kind == "metric_early_stopping" and p.policy is not None
            ),
            None,
        )
        self.flights: dict[Future[TrialResult], _Flight] = {}
        self.finished: list[RunSummary] = []
        self.decision: Any = None
        self.tags = [str(t) for t in (getattr(self.component, "tags", None) or []) if t]
        context = FlowRunContext.get()
        self.flow_run_id = context.flow_run.id if context and context.flow_run else None
        self.progress_id: Any = None
        self.progress_at = 0.0
        self.trial_flow_id: UUID | None = None
        self.trials_task_run_id: UUID | None = None
        self.client: Any = None
        self.context = request.run_context or create_run_context(
            request.op_name, _project(), run_uuid=None
        )

    # -- study ----------------------------------------------------------------------------

    def open_study(self) -> SweepStudy:
        from polyaxon_prefect.search._study import SweepStudy

        options = self.request.sweep
        input_types = {
            io.name: str(io.type) for io in (self.component.inputs or []) if io.type is not None
        }
        prefix = study_prefix(self.request)
        resume = options.resume
        name = options.study_name
        if resume and name is None:
            name = SweepStudy.latest(options.storage, prefix)
            if name is None:
                self.logger.warning(
                    "--resume: no earlier sweep of this op in the storage; starting a new one"
                )
                resume = False
        if name is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            name = f"{prefix}-{stamp}-{secrets.token_hex(2)}"
        study = SweepStudy.open(
            self.matrix,
            study_name=name,
            storage=options.storage,
            resume=resume,
            input_types=input_types,
        )
        for warning in study.warnings:
            self.logger.warning(warning)
        if resume and options.study_name is not None:
            # joining a named study as one more worker: the others' running trials are theirs
            self.logger.info("joining sweep %s as one more worker", name)
        elif resume:
            retried = study.recover()
            done = [r for r in study.history() if r.status in _DONE]
            self.finished = [_summary(r) for r in done]
            self.logger.info(
                "resuming sweep %s: %d trial(s) already done%s",
                name,
                len(done),
                f", retrying {retried} left running" if retried else "",
            )
        else:
            self.logger.info("sweep %s (study in %s)", name, _safe_url(study.storage_url))
        return study

    # -- launching ------------------------------------------------------------------------

    def limit(self) -> int:
        concurrency = self.matrix.concurrency
        if isinstance(concurrency, int):
            return concurrency
        return _UNLIMITED_THREADS

    def launch(self, executor: ThreadPoolExecutor, suggestion: Suggestion) -> None:
        cancel = threading.Event()
        index = suggestion.index
        name = trial_name(index, suggestion.params)
        run_uuid = uuid.uuid4().hex
        context = create_run_context(
            f"{self.request.op_name}-trial-{index}",
            _project(),
            run_uuid=run_uuid,
            iteration=index,
        )
        metrics_path = context.run_outputs_path / METRICS_FILE
        flight = _Flight(suggestion, cancel, metrics_path if self.prune_metric else None)
        params = {**dict(self.request.params), **suggestion.params}
        trial_request = self.request.with_(
            loaded=trial_loaded(self.request.loaded, suggestion.params),
            params=params,
            run_context=context,
            name=name,
            cancel_event=cancel,
            in_pipeline=True,
            sweep=type(self.request.sweep)(),
        )
        call = contextvars.copy_context().run
        future = executor.submit(call, self._run_trial, trial_request, suggestion, run_uuid)
        self.flights[future] = flight

    def _run_trial(self, trial: OpRequest, suggestion: Suggestion, run_uuid: str) -> TrialResult:
        """In a worker thread (with a copy of the flow's context)."""
        deployment = self.request.sweep.deployment
        if deployment:
            files = trial.loaded.files
            parameters = {
                "polyaxonfile": str(Path(files[0]).absolute()) if files else "",
                "params": _jsonable(self._deployment_params(trial)),
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
        if self.kind != "job":
            return run_subflow_trial(trial)
        return self._run_job(trial, suggestion)

    def _deployment_params(self, trial: OpRequest) -> dict[str, Any]:
        """The values the trial's run loads the file with: the file's literal params, the
        overrides and the suggestion (outputs' empty placeholders left out)."""
        outputs = {io.name for io in (self.component.outputs or [])}
        merged = {**dict(self.request.loaded.params), **dict(trial.params)}
        return {k: v for k, v in merged.items() if not (k in outputs and v is None)}

    def _run_job(self, trial: OpRequest, suggestion: Suggestion) -> TrialResult:
        """Body of the linking task: prepare the job, run it as a child flow run."""
        from polyaxon_prefect.runtime._job import prepare_job

        try:
            job = prepare_job(
                trial.loaded,
                run_context=trial.run_context,
                params=trial.params,
                connections=trial.connections,
                in_pipeline=False,
                skip_builds=trial.skip_builds,
                base_dir=trial.base_dir,
            )
        except PolyaxonPrefectError as exc:
            return TrialResult("failed", message=str(exc))
        assert self.trial_flow_id is not None
        return run_job_trial(
            job,
            flow_id=self.trial_flow_id,
            name=trial.name or job.op_name,
            parameters=_jsonable(suggestion.params),
            tags=list(dict.fromkeys([*self.tags, *job.tags])),
            parent_task_run_id=self.trials_task_run_id,
            client=self.client,
            cancel_event=trial.cancel_event,
        )

    # -- watching -------------------------------------------------------------------------

    def watch_metrics(self, study: SweepStudy) -> None:
        """Feed new intermediate values of the running trials to the pruner."""
        if self.prune_metric is None:
            return
        for future, flight in self.flights.items():
            if future.done() or flight.pruned or flight.metrics_path is None:
                continue
            for step, value in _new_values(flight, self.prune_metric):
                if study.report(flight.suggestion.number, step, value):
                    flight.pruned = True
                    flight.cancel.set()
                    self.logger.info(
                        "trial %d pruned at step %d (%s=%g)",
                        flight.suggestion.index,
                        step,
                        self.prune_metric,
                        value,
                    )
                    break

    def record(self, study: SweepStudy, future: Future[TrialResult]) -> None:
        flight = self.flights.pop(future)
        try:
            result = future.result()
        except Exception as exc:  # the trial's machinery failed, not its process
            result = TrialResult("failed", message=f"the trial could not run: {exc}")
        status = result.status
        if flight.cancel.is_set() and status in ("failed", "stopped"):
            status = "stopped"
        if status not in _DONE:
            status = "failed"
        if self.prune_metric and flight.metrics_path is not None and not flight.pruned:
            # values logged since the last look: the pruner compares later trials with them
            for step, value in _new_values(flight, self.prune_metric):
                study.report(flight.suggestion.number, step, value)
        message = result.message
        if flight.pruned:
            message = f"pruned by the {self.prune_metric} stopping policy"
        study.tell(
            flight.suggestion.number,
            status=status,
            outputs=result.outputs,
            metrics=result.metrics,
            uuid=result.uuid,
            message=message,
        )
        self.finished.append(RunSummary(status, {**result.metrics, **result.outputs}))
        log = self.logger.info if status in ("succeeded", "stopped") else self.logger.warning
        log("trial %d %s", flight.suggestion.index, status)
        if self.decision is None:
            decision = check_early_stopping(self.policies, self.finished, study.total)
            if decision is not None:
                self.stop(study, decision)

    def stop(self, study: SweepStudy, decision: Any) -> None:
        self.decision = decision
        self.logger.info("stopping the sweep: %s", decision.reason)
        study.stop(decision.reason)
        for flight in self.flights.values():
            flight.cancel.set()

    # -- iterative ------------------------------------------------------------------------

    def run_tuner(self, study: SweepStudy, tuner_params: dict[str, Any]) -> bool:
        """Run the tuner op; hand its ``suggestions`` output to the study. False: it failed."""
        from polyaxon_prefect.loading._load import load_polyaxonfile
        from polyaxon_prefect.prefect._dispatch import SweepOptions

        tuner = getattr(self.matrix, "tuner", None)
        if tuner is None:
            self.stop(study, _Decision("the iterative matrix has no `tuner`", "failed"))
            return False
        iteration = tuner_params.get("iteration", 0)
        files = self.request.loaded.files
        base = Path(files[0]).absolute().parent if files else Path.cwd()
        op: dict[str, Any] = {"version": 1.1, "kind": "operation", "hubRef": tuner.hub_ref}
        if tuner.params:
            op["params"] = dict(tuner.params)
        with tempfile.TemporaryDirectory(prefix="polyaxon-tuner-") as folder:
            path = Path(folder) / "tuner.json"
            path.write_text(json.dumps(op), encoding="utf-8")
            try:
                loaded = load_polyaxonfile(
                    path,
                    params=tuner_params,
                    hub_dirs=[base, base / "hub", *_env_hubs()],
                )
            except PolyaxonPrefectError as exc:
                self.stop(study, _Decision(f"the tuner could not be loaded: {exc}", "failed"))
                return False
        loaded = dataclasses.replace(loaded, files=tuple(files))
        request = self.request.with_(
            loaded=loaded,
            params={},
            run_context=create_run_context(f"{self.request.op_name}-tuner", _project()),
            name=f"tuner-{iteration}",
            cancel_event=None,
            sweep=SweepOptions(),
        )
        result = run_subflow_trial(request)
        suggestions = result.outputs.get("suggestions")
        if result.status != "succeeded" or not isinstance(suggestions, list):
            reason = (
                f"the tuner (iteration {iteration}) ended {result.status}"
                if result.status != "succeeded"
                else "the tuner did not output a `suggestions` list"
            )
            self.stop(study, _Decision(f"{reason}: {result.message}", "failed"))
            return False
        self.logger.info("tuner iteration %s: %d suggestion(s)", iteration, len(suggestions))
        study.add_suggestions([dict(s) for s in suggestions])
        return True

    # -- UI -------------------------------------------------------------------------------

    def progress(self, study: SweepStudy, *, final: bool = False) -> None:
        from prefect.artifacts import create_progress_artifact, update_progress_artifact

        now = time.monotonic()
        if not final and now - self.progress_at < _PROGRESS_EVERY_SECONDS:
            return
        self.progress_at = now
        done = len(self.finished)
        total = study.total or (done + len(self.flights)) or 1
        value = 100.0 if final else min(100.0, 100.0 * done / total)
        description = f"{done} of {study.total if study.total else '?'} trials done"
        with contextlib.suppress(Exception):  # a view: never fail the sweep for it
            if self.progress_id is None:
                self.progress_id = create_progress_artifact(
                    value, key=f"{_slug(self.request.op_name)}-progress", description=description
                )
            else:
                update_progress_artifact(self.progress_id, value, description=description)

    def artifacts(self, study: SweepStudy, history: list[TrialRecord], best: Any) -> None:
        from prefect.artifacts import create_markdown_artifact, create_table_artifact

        metric = study.metric_name
        sign = -1.0 if study.maximize else 1.0

        def rank(record: TrialRecord) -> tuple[int, float, int]:
            value = _finite(record.value)
            if value is None:
                return (1, 0.0, record.index)
            return (0, sign * value, record.index)

        rows = []
        for position, record in enumerate(sorted(history, key=rank)[:_LEADERBOARD_ROWS], 1):
            row: dict[str, Any] = {"rank": position, "trial": record.index}
            row["status"] = record.status
            if metric:
                row[metric] = record.value
            for key, value in record.params.items():
                row[key] = _cell(value)
            row["uuid"] = record.uuid
            rows.append(row)
        slug = _slug(self.request.op_name)
        rows = mask_value(rows)
        best = mask_value(best)
        with contextlib.suppress(Exception):
            create_table_artifact(
                rows or [{"rank": None, "trial": None}],
                key=f"{slug}-leaderboard",
                description=(
                    f"trials of `{self.request.op_name}`"
                    + (f", best {metric} first" if metric else "")
                ),
            )
            lines = [f"# Sweep `{self.request.op_name}`", ""]
            if best is not None:
                lines += [
                    f"Best trial: **{best['index']}** ({best['status']})"
                    + (f", {metric} = {best['value']}" if metric else ""),
                    "",
                    "| param | value |",
                    "|---|---|",
                    *(f"| {k} | {_cell(v)} |" for k, v in best["params"].items()),
                ]
            else:
                lines.append("No best trial (no succeeded trial with a metric value).")
            create_markdown_artifact("\n".join(lines), key=f"{slug}-best")

    # -- main loop ------------------------------------------------------------------------

    def run(self, on_outcome: OutcomeCallback | None) -> Any:
        study = self.open_study()
        if self.kind == "job" and not self.request.sweep.deployment:
            self.trial_flow_id = _flow_id(self.component, self.request.op_name)
        limit = self.limit()
        self.progress(study, final=False)
        from prefect.client.orchestration import get_client

        with (
            get_client(sync_client=True) as self.client,
            ThreadPoolExecutor(max_workers=limit, thread_name_prefix="trial") as executor,
        ):
            if self.trial_flow_id is not None:
                self.trials_task_run_id = _trials_task_run(self.client, self.flow_run_id)
            try:
                self.loop(study, executor, limit)
            except BaseException as exc:
                for flight in self.flights.values():
                    flight.cancel.set()
                _end_trials_task_run(self.client, self.trials_task_run_id, Failed(message=str(exc)))
                raise
            state = self.finish(study, on_outcome)
            _end_trials_task_run(self.client, self.trials_task_run_id, state)
        return state

    def check_stop_request(self) -> None:
        """An interrupted run or a stopped parent op: stop the trials in flight, launch no
        more, and end ``stopped``. The study is not marked stopped, so ``--resume`` goes on."""
        cancel = self.request.cancel_event
        if self.decision is not None:
            return
        if stop_requested() or (cancel is not None and cancel.is_set()):
            self.decision = _Decision(stop_reason() or "the sweep was stopped", "stopped")
            self.logger.warning("stopping the sweep: %s", self.decision.reason)
            for flight in self.flights.values():
                flight.cancel.set()

    def loop(self, study: SweepStudy, executor: ThreadPoolExecutor, limit: int) -> None:
        while True:
            self.check_stop_request()
            if self.decision is None:
                while len(self.flights) < limit:
                    suggestion = study.ask()
                    if suggestion is None:
                        break
                    self.launch(executor, suggestion)
            if not self.flights:
                if self.decision is not None:
                    return
                tuner_params = study.tuner_request()
                if tuner_params is not None:
                    if not self.run_tuner(study, tuner_params):
                        return
                    continue
                if study.is_finished():
                    return
                if study.stop_reason is not None:
                    return
                time.sleep(_POLL_SECONDS)  # another worker holds the remaining trials
                continue
            done, _ = wait(list(self.flights), timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
            self.watch_metrics(study)
            for future in done:
                self.record(study, future)
            self.progress(study)

    def finish(self, study: SweepStudy, on_outcome: OutcomeCallback | None) -> Any:
        history = study.history()
        trials = [_trial_dict(r) for r in history]
        best_record = study.best()
        best = _trial_dict(best_record) if best_record is not None else None
        self.progress(study, final=True)
        self.artifacts(study, history, best)
        counts: dict[str, int] = {}
        for record in history:
            counts[record.status] = counts.get(record.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no trials"
        reason = ""
        if self.decision is not None:
            status, reason = self.decision.status, self.decision.reason
        elif study.stop_reason:
            status, reason = "succeeded", str(study.stop_reason)
        elif counts.get("failed"):
            status = "failed"
        else:
            status = "succeeded"
        message = f"{len(history)} trials: {summary}" + (f"; {reason}" if reason else "")
        if best is not None:
            message += f"; best trial {best['index']}"
        outcome = OpOutcome(
            status,
            outputs=dict(best_record.outputs) if best_record else {},
            metrics=dict(best_record.metrics) if best_record else {},
            message=message,
            uuid=self.context.uuid,
            artifacts_path=str(self.context.run_artifacts_path),
            trials=trials,
            best=best,
            reason=reason,
        )
        self.logger.info("sweep %s: %s", study.name, message)
        if on_outcome is not None:
            on_outcome(outcome)
        data = {"study": study.name, "best": best, "trials": len(trials)}
        return state_for_status(status, message, data)


@dataclass(frozen=True)
class _Decision:
    reason: str
    status: str


def _trials_body() -> None:
    """Never called: the task whose one run per sweep is the parent of its trial flow runs."""


_TRIALS_TASK = task(_trials_body, name="trials", cache_policy=NO_CACHE, persist_result=False)


def _trials_task_run(client: Any, flow_run_id: UUID | None) -> UUID | None:
    """One task run of the sweep, created ``Running`` through the API, that every job trial's
    child flow run hangs under (so the UI lists the trials as the sweep's subflow runs).

    One per sweep, not one per trial: a task run per trial made each trial wait for the
    server to record it from its events before its flow run could name it as parent (about
    60 ms, 404s while polling), and doubled the writes that contend for the server's
    database (SQLite answered ``503`` under four concurrent trials, and the client's retry
    back-off cost seconds).
    """
    from prefect.states import Running

    if flow_run_id is None:
        return None
    task_run = client.create_task_run(
        task=_TRIALS_TASK,
        flow_run_id=flow_run_id,
        dynamic_key="trials",
        name="trials",
        state=Running(),
    )
    return task_run.id


def _end_trials_task_run(client: Any, task_run_id: UUID | None, state: Any) -> None:
    if task_run_id is None:
        return
    final = state if isinstance(state, State) else Completed()
    with contextlib.suppress(Exception):  # a view: the sweep's own state is what matters
        client.set_task_run_state(task_run_id, final.model_copy(update={"data": None}), force=True)


# ----------------------------------------------------------------------------- helpers


def _project() -> str:
    from polyaxon_prefect.runtime import project_name

    return project_name()


def _env_hubs() -> list[Path]:
    from polyaxon_prefect.loading._refs import hub_dirs_from_env

    return hub_dirs_from_env()


def _flow_id(component: Any, op_name: str) -> UUID:
    """The id of the flow the trial runs belong to (the component's name, like a job's)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import FlowCreate

    name = flow_name(getattr(component, "name", None) or op_name)
    with get_client(sync_client=True) as client:
        response = client.request(
            "POST", "/flows/", json=FlowCreate(name=name).model_dump(mode="json")
        )
        return UUID(response.json()["id"])


def _new_values(flight: _Flight, metric: str) -> list[tuple[int, float]]:
    """Complete lines appended to the trial's metrics.jsonl since the last look."""
    path = flight.metrics_path
    assert path is not None
    try:
        with open(path, "rb") as handle:
            handle.seek(flight.offset)
            chunk = handle.read()
    except FileNotFoundError:
        return []
    end = chunk.rfind(b"\n")
    if end < 0:
        return []
    flight.offset += end + 1
    values = []
    for raw in chunk[: end + 1].splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("step") is None:
            continue
        value = _finite(record.get(metric))
        if value is not None:
            values.append((int(record["step"]), value))
    return values


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, default=str)


def _summary(record: TrialRecord) -> RunSummary:
    return RunSummary(record.status, {**record.metrics, **record.outputs})


def _trial_dict(record: TrialRecord) -> dict[str, Any]:
    return {
        "index": record.index,
        "number": record.number,
        "params": _jsonable(record.params),
        "status": record.status,
        "outputs": _jsonable(record.outputs),
        "metrics": _jsonable(record.metrics),
        "uuid": record.uuid,
        "value": record.value,
        "message": record.message,
    }


def _safe_url(url: str) -> str:
    """The storage URL without its password."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def run_sweep_in_flow(request: OpRequest, on_outcome: OutcomeCallback | None = None) -> Any:
    """Run the matrix op ``request`` as a sweep inside the current flow run (module docstring).

    Calls ``on_outcome`` once with the sweep's `OpOutcome` (``trials``, ``best``, ``reason``)
    and returns the final state of the flow run (Completed, Failed or Cancelled).
    """
    return _Sweep(request).run(on_outcome)
