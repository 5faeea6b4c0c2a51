"""A matrix operation as a sweep: the current flow run asks, launches, watches and tells.

The parent flow run is the sweep. Its state is one Optuna study (`SweepStudy`: a local journal
file by default, any Optuna storage URL with ``--storage``), so everything a sweep knows
survives its process: ``run --resume`` reopens the latest study of the same op, fails and
re-queues the trials a killed parent left running, re-queues those a stop cut short, and never
re-runs a completed one.

The loop (the study calls happen in the flow's own thread, but a job trial's end: trials run in a
thread pool, and a job trial tells the study how it ended from its own thread as soon as its
process ends, before its Prefect records, so a trial that ended while the server was down
counts as done on ``--resume``; under a pruning policy, its last intermediate values go to the
pruner first, under the trial's lock, so the loop's watch never reads them twice)::

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
- a stop (Ctrl-C, ``stop``): ``stopped``, saying how many points are not run; the study is
  not marked stopped, so ``--resume`` runs those points (the trials the stop cut short with the
  same params, `search._optuna._resume`);
- otherwise ``stopped`` while points are not run (``2 of 6 points not run; run again with
  --resume``), ``failed`` when any trial failed (after its retries), else ``succeeded``; trials
  pruned by a stopping policy end ``stopped`` and do not fail the sweep.

The UI gets a progress artifact (trials done / total, running, failed, the best so far and the
ETA, updated in place), a leaderboard table (best first by the matrix metric: its last value, or
its best over steps with ``metricOverSteps: best``, with params) and a markdown summary of the
best trial. Each trial's end is one log line, ``trial 3 succeeded (7/20) loss=0.31 (best 0.29,
trial 4) eta 1m20s`` (`search._progress`), and the flow run's progress label holds the same
numbers for ``get --json`` (`watch._progress_publish`).
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import get_run_logger
from prefect.context import FlowRunContext
from prefect.states import Failed

from polyaxon_prefect.exceptions import PolyaxonPrefectError, unwritable_study
from polyaxon_prefect.prefect._job_flow import OutcomeCallback
from polyaxon_prefect.prefect._request import Children, OpRequest, SweepOptions
from polyaxon_prefect.prefect._states import state_for_status
from polyaxon_prefect.prefect.runs._record import note_study
from polyaxon_prefect.prefect.sweep._sweep_board import SweepBoard
from polyaxon_prefect.prefect.sweep._sweep_study import open_sweep_study, study_prefix
from polyaxon_prefect.prefect.sweep._sweep_trials import TrialRunner
from polyaxon_prefect.prefect.sweep._trials import (
    end_trials_task_run,
    trial_flow_id,
    trials_task_run,
)
from polyaxon_prefect.prefect.sweep._tuner import TunerFailedError, tuner_suggestions
from polyaxon_prefect.runtime import new_run_context, project_name, record_child
from polyaxon_prefect.runtime._outputs import tail_metric
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.session._session import stop_reason, stop_requested
from polyaxon_prefect.search import (
    BEST_OVER_STEPS,
    SweepProgress,
    SweepTracker,
    metric_values,
    objective_value,
    trial_line,
)
from polyaxon_prefect.search._sweep import (
    SweepRun,
    gpu_budget_spent,
    trial_dict,
    trial_loaded,
    trial_name,
)
from polyaxon_prefect.specs import DONE_STATUSES, Status
from polyaxon_prefect.tracking import METRICS_FILE, read_metrics_file

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

    from polyaxon_prefect.prefect._settings import RunLogger
    from polyaxon_prefect.search import Suggestion, SweepStudy

__all__ = ["run_sweep_in_flow", "study_prefix", "trial_loaded", "trial_name"]

_POLL_SECONDS = 0.25
_UNLIMITED_THREADS = 256


# ----------------------------------------------------------------------------- the sweep


@dataclass
class _Flight:
    """A trial in flight."""

    suggestion: Suggestion
    cancel: threading.Event
    metrics_path: Path | None
    metric: str | None = None
    """The metric the pruner watches (read from ``metrics_path``)."""
    offset: int = 0
    pruned: bool = False
    told: bool = False
    """The study knows how the trial ended (told from the trial's own thread)."""
    history_path: Path | None = None
    """The trial's ``metrics.jsonl``: its metric's best over steps, when the matrix ranks so."""
    over_steps: str | None = None
    started: float = 0.0
    """When it was launched (monotonic): its duration feeds the sweep's ETA."""
    value: Any = None
    """Its value of the sweep's metric, as told to the study."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while the trial's metrics are read or its end told: the loop's pruner watch and
    the trial's own thread both do."""


def _tell(study: SweepStudy, flight: _Flight, prune_metric: str | None, result: RunResult) -> None:
    """Write how a trial ended to the study, once: from the trial's thread when its job's
    process ends (the trial's Prefect records may then wait on a dead server), else when the
    loop records it. Under a pruning policy, the values logged since the loop's last look go
    to the pruner first: later trials are compared with them."""
    with flight.lock:
        if not flight.told:
            _tell_once(study, flight, prune_metric, result)
            flight.told = True


def _tell_once(
    study: SweepStudy, flight: _Flight, prune_metric: str | None, result: RunResult
) -> None:
    if prune_metric and flight.metrics_path is not None and not flight.pruned:
        for step, value in _new_values(flight):
            study.report(flight.suggestion.number, step, value)
    status = SweepRun.trial_status(result.status, flight.cancel.is_set())
    message = result.message
    if flight.pruned:
        message = f"pruned by the {prune_metric} stopping policy"
    flight.value = _value(study, flight, result)
    study.tell(
        flight.suggestion.number,
        status=status,
        value=flight.value,
        outputs=result.outputs,
        metrics=result.metrics,
        uuid=result.uuid,
        message=message,
        gpu_hours=result.gpu_hours,
        unfinished=status == Status.STOPPED and not flight.pruned,  # `--resume` reruns it
    )


def _value(study: SweepStudy, flight: _Flight, result: RunResult) -> object:
    """The trial's value of the sweep's metric: its output or last value, or with
    ``metricOverSteps: best`` the best value it logged over its steps (`objective_value`)."""
    metric = study.metric_name
    history: list[Any] = []
    if metric is not None and flight.over_steps == BEST_OVER_STEPS and flight.history_path:
        history = metric_values(read_metrics_file(flight.history_path), metric)
    return objective_value(
        metric,
        result.outputs,
        result.metrics,
        history,
        over_steps=flight.over_steps,
        maximize=study.maximize,
    )


class _Sweep:
    def __init__(self, request: OpRequest, children: Children) -> None:
        self.request = request
        self.children = children
        self.operation = request.operation
        matrix = self.operation.matrix
        assert matrix is not None  # the dispatcher sends only ops with a matrix here
        self.matrix = matrix
        self.component = self.operation.component
        self.logger = get_run_logger()
        trial = request.with_(loaded=trial_loaded(request.loaded, {}))
        self.in_process = children.runs_in_process(trial)
        """Job trials: one process each, recorded as flow runs by the sweep (`_trials`)."""
        self.policies = list(self.matrix.early_stopping or [])
        self.prune_metric = next(
            (
                p.metric
                for p in self.policies
                if p.kind == "metric_early_stopping" and p.policy is not None
            ),
            None,
        )
        self.flights: dict[Future[RunResult], _Flight] = {}
        self.book = SweepRun(self.policies)
        context = FlowRunContext.get()
        flow_run_id = context.flow_run.id if context and context.flow_run else None
        self.trials = TrialRunner(request, children, self.in_process, flow_run_id, request.tags)
        self.context = (
            request.run_context
            or new_run_context(request.op_name, project_name(), run_uuid=None).make_dirs()
        )
        self.board = SweepBoard(request.op_name, self.context.uuid, flow_run_id)
        self.tracker = SweepTracker(None, False, None, 1)
        """What the sweep's progress is computed from (made again once the study is open)."""
        self.gpu_hours = 0.0
        """GPU-hours of the trials ended so far (`gpu_budget_spent`)."""

    # -- study ----------------------------------------------------------------------------

    def open_study(self) -> SweepStudy:
        study = open_sweep_study(self.request, self.book, self.logger)
        note_study(self.context.run_path, study.name)  # what `resume RUN` continues
        self.tracker = _tracker(study, self.matrix.metric_over_steps, self.limit(), self.book)
        return study

    # -- launching ------------------------------------------------------------------------

    def limit(self) -> int:
        concurrency = self.matrix.concurrency
        if isinstance(concurrency, int):
            return concurrency
        return _UNLIMITED_THREADS

    def launch(
        self, executor: ThreadPoolExecutor, suggestion: Suggestion, study: SweepStudy
    ) -> None:
        cancel = threading.Event()
        index = suggestion.index
        name = trial_name(index, suggestion.params)
        run_uuid = uuid.uuid4().hex
        context = new_run_context(
            f"{self.request.op_name}-trial-{index}",
            project_name(),
            run_uuid=run_uuid,
            iteration=index,
        ).make_dirs()
        record_child(self.context.run_path, f"trial-{index}", run_uuid)  # `logs` without the server
        metrics_path = context.run_outputs_path / METRICS_FILE
        watched = metrics_path if self.prune_metric else None
        flight = _Flight(suggestion, cancel, watched, self.prune_metric)
        flight.history_path, flight.over_steps = metrics_path, self.matrix.metric_over_steps
        flight.started = time.monotonic()
        params = {**dict(self.request.params), **suggestion.params}
        trial_request = self.request.with_(
            loaded=trial_loaded(self.request.loaded, suggestion.params),
            params=params,
            run_context=context,
            name=name,
            cancel_event=cancel,
            # a job trial is not cached (the study is the sweep's memory); a DAG trial's ops are
            in_pipeline=not self.in_process,
            sweep=SweepOptions(),
        )
        call = contextvars.copy_context().run
        told = functools.partial(_tell, study, flight, self.prune_metric)
        future = executor.submit(call, self.trials.run, trial_request, suggestion, run_uuid, told)
        self.flights[future] = flight

    # -- watching -------------------------------------------------------------------------

    def watch_metrics(self, study: SweepStudy) -> None:
        """Feed new intermediate values of the running trials to the pruner."""
        if self.prune_metric is None:
            return
        for future, flight in self.flights.items():
            if future.done() or flight.pruned or flight.metrics_path is None:
                continue
            with flight.lock:  # the trial's thread may be telling its end
                if not flight.told:
                    self.prune_check(study, flight)

    def prune_check(self, study: SweepStudy, flight: _Flight) -> None:
        """Feed the trial's new values to the pruner; cancel it when the pruner says so."""
        for step, value in _new_values(flight):
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
                return

    def record(self, study: SweepStudy, future: Future[RunResult]) -> None:
        flight = self.flights.pop(future)
        try:
            result = future.result()
        except Exception as exc:  # the trial's machinery failed, not its process
            result = RunResult(Status.FAILED, message=f"the trial could not run: {exc}")
        status = SweepRun.trial_status(result.status, flight.cancel.is_set())
        _tell(study, flight, self.prune_metric, result)
        self.gpu_hours += result.gpu_hours or 0.0
        _finished(self.tracker, flight, status)
        metrics = {**result.metrics, **result.outputs}
        decision = self.book.trial_finished(status, metrics, study.total)
        _say(self.logger, flight, status, self.current(study))
        if decision is not None:
            self.stopping(study, decision.reason)
        budget = gpu_budget_spent(self.matrix, self.gpu_hours)
        if budget is not None:
            self.stop(study, budget, Status.SUCCEEDED)

    def stop(self, study: SweepStudy, reason: str, status: Status) -> None:
        if self.book.stop(reason, status) is not None:
            self.stopping(study, reason)

    def stopping(self, study: SweepStudy, reason: str) -> None:
        self.logger.info("stopping the sweep: %s", reason)
        study.stop(reason)
        for flight in self.flights.values():
            flight.cancel.set()

    # -- iterative ------------------------------------------------------------------------

    def run_tuner(self, study: SweepStudy, tuner_params: dict[str, Any]) -> bool:
        """Run the tuner op; hand its ``suggestions`` output to the study. False: it failed."""
        try:
            suggestions = tuner_suggestions(self.request, self.children, tuner_params)
        except TunerFailedError as exc:
            self.stop(study, str(exc), Status.FAILED)
            return False
        iteration = tuner_params.get("iteration", 0)
        self.logger.info("tuner iteration %s: %d suggestion(s)", iteration, len(suggestions))
        study.add_suggestions(suggestions)
        return True

    def current(self, study: SweepStudy) -> SweepProgress:
        """How far the sweep is now (`SweepProgress`)."""
        return _current(self.tracker, len(self.book.finished), study.total, self.flights)

    def progress(self, study: SweepStudy, *, final: bool = False) -> None:
        self.board.progress(self.current(study), final=final, client=self.trials.client)

    # -- main loop ------------------------------------------------------------------------

    def refused(self, message: str, on_outcome: OutcomeCallback | None) -> State:
        """The study cannot be opened (a damaged journal, nothing to resume as asked): the
        sweep ends failed with that one sentence as its message, no trial run, no traceback."""
        outcome = RunResult(
            Status.FAILED,
            name=self.request.op_name,
            message=message,
            uuid=self.context.uuid,
            artifacts_path=str(self.context.run_artifacts_path),
            trials=[],
        )
        if on_outcome is not None:
            on_outcome(outcome)
        return state_for_status(Status.FAILED, message, {"study": None, "best": None, "trials": 0})

    def run(self, on_outcome: OutcomeCallback | None) -> State:
        try:
            study = self.open_study()
        except PolyaxonPrefectError as exc:
            return self.refused(str(exc), on_outcome)
        except OSError as exc:  # the study's storage cannot be written: one line, no trace
            return self.refused(unwritable_study(exc), on_outcome)
        limit = self.limit()
        from prefect.client.orchestration import get_client

        with (
            get_client(sync_client=True) as client,
            ThreadPoolExecutor(max_workers=limit, thread_name_prefix="trial") as executor,
        ):
            self.trials.client = client
            if self.in_process and not self.request.sweep.deployment:
                flow_id = trial_flow_id(client, self.component, self.request.op_name)
                self.trials.trial_flow_id = flow_id
                self.trials.trials_task_run_id = trials_task_run(client, self.trials.flow_run_id)
            # the first progress after the records every trial needs: its writes in the
            # background would meet theirs (a `503`)
            self.progress(study, final=False)
            try:
                self.loop(study, executor, limit)
            except OSError as exc:  # the study's storage cannot be written: one line, no trace
                for flight in self.flights.values():
                    flight.cancel.set()
                message = unwritable_study(exc)
                self.logger.error(message)
                end_trials_task_run(client, self.trials.trials_task_run_id, Failed(message=message))
                return self.refused(message, on_outcome)
            except BaseException as exc:
                for flight in self.flights.values():
                    flight.cancel.set()
                end_trials_task_run(
                    client, self.trials.trials_task_run_id, Failed(message=str(exc))
                )
                raise
            state = self.finish(study, on_outcome)
            end_trials_task_run(client, self.trials.trials_task_run_id, state)
        return state

    def check_stop_request(self) -> None:
        """An interrupted run or a stopped parent op: stop the trials in flight, launch no
        more, and end ``stopped``. The study is not marked stopped, so ``--resume`` goes on."""
        cancel = self.request.cancel_event
        if self.book.decision is not None:
            return
        if stop_requested() or (cancel is not None and cancel.is_set()):
            decision = self.book.stop(stop_reason() or "the sweep was stopped", Status.STOPPED)
            assert decision is not None
            self.logger.warning("stopping the sweep: %s", decision.reason)
            for flight in self.flights.values():
                flight.cancel.set()

    def loop(self, study: SweepStudy, executor: ThreadPoolExecutor, limit: int) -> None:
        while True:
            self.check_stop_request()
            if self.book.decision is None:
                while len(self.flights) < limit:
                    suggestion = study.ask()
                    if suggestion is None:
                        break
                    self.launch(executor, suggestion, study)
            if not self.flights:
                if self.book.decision is not None:
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

    def finish(self, study: SweepStudy, on_outcome: OutcomeCallback | None) -> State:
        history = study.history()
        trials = [trial_dict(r) for r in history]
        best_record = study.best()
        best = trial_dict(best_record) if best_record is not None else None
        self.progress(study, final=True)
        self.board.results(study, history, best, self.matrix.metric_over_steps)
        status, reason, message = self.book.outcome(
            history,
            study.stop_reason,
            best["index"] if best is not None else None,
            (study.not_run(), study.total),
        )
        outcome = RunResult(
            status,
            name=self.request.op_name,
            outputs=dict(best_record.outputs) if best_record else {},
            metrics=dict(best_record.metrics) if best_record else {},
            message=message,
            uuid=self.context.uuid,
            artifacts_path=str(self.context.run_artifacts_path),
            trials=trials,
            best=best,
            reason=reason,
            gpu_hours=_sum_gpu_hours(history),
        )
        self.logger.info("sweep %s: %s", study.name, message)
        if on_outcome is not None:
            on_outcome(outcome)
        data = {"study": study.name, "best": best, "trials": len(trials)}
        return state_for_status(status, message, data)


# ----------------------------------------------------------------------------- helpers


def _tracker(
    study: SweepStudy, over_steps: str | None, concurrency: int, book: SweepRun
) -> SweepTracker:
    """What the sweep's progress is computed from; a resumed sweep's earlier failures and best
    count (``book`` holds the trials it finished before)."""
    tracker = SweepTracker(study.metric_name, study.maximize, over_steps, concurrency)
    if book.finished:
        tracker.resumed(r for r in study.history() if r.status in DONE_STATUSES)
    return tracker


def _finished(tracker: SweepTracker, flight: _Flight, status: Status) -> None:
    """Tell ``tracker`` how the trial of ``flight`` ended, and how long it ran."""
    suggestion, duration = flight.suggestion, time.monotonic() - flight.started
    tracker.finished(suggestion.index, status, flight.value, suggestion.params, duration)


def _say(logger: RunLogger, flight: _Flight, status: Status, progress: SweepProgress) -> None:
    """The line of a trial's end, this trial counted: ``trial 3 succeeded (7/20) loss=0.31
    (best 0.29, trial 4) eta 1m20s`` (a warning when it did not succeed nor stop)."""
    log = logger.info if status in (Status.SUCCEEDED, Status.STOPPED) else logger.warning
    log("%s", trial_line(flight.suggestion.index, status, flight.value, progress))


def _current(
    tracker: SweepTracker, done: int, total: int | None, flights: dict[Any, _Flight]
) -> SweepProgress:
    """How far the sweep is: ``done`` trials ended of ``total``, ``flights`` running."""
    now = time.monotonic()
    return tracker.progress(done, total, [now - flight.started for flight in flights.values()])


def _sum_gpu_hours(history: list[Any]) -> float | None:
    """The sweep's GPU-hours: its trials' (a resumed sweep's earlier trials included)."""
    hours = [r.gpu_hours for r in history if getattr(r, "gpu_hours", None) is not None]
    return sum(hours) if hours else None


def _new_values(flight: _Flight) -> list[tuple[int, float]]:
    assert flight.metrics_path is not None and flight.metric is not None
    values, flight.offset = tail_metric(flight.metrics_path, flight.offset, flight.metric)
    return values


def run_sweep_in_flow(
    request: OpRequest, children: Children, on_outcome: OutcomeCallback | None = None
) -> State:
    """Run the matrix op ``request`` as a sweep inside the current flow run (module docstring).

    Calls ``on_outcome`` once with the sweep's `RunResult` (``trials``, ``best``, ``reason``)
    and returns the final state of the flow run (Completed, Failed or Cancelled).
    """
    return _Sweep(request, children).run(on_outcome)
