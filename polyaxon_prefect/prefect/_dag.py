"""A DAG operation as one Prefect flow run: a small scheduler that submits each op when its
trigger is decided.

Prefect 3 has no trigger rules and no Skipped state, and its own dependency handling parks a
task whose upstream crashed or was cancelled in a ``Pending/NotReady`` state forever. So the
decisions are made here, on Polyaxon statuses (`polyaxon_prefect.dag.decide`), and Prefect only
runs what was decided (the design prefect-dbt ships for dbt graphs):

- an op is submitted only when its trigger says ``run``; each finished future feeds a queue
  through a done-callback, and its state is read only after ``fut.wait()`` (a future's state
  read earlier can be stale);
- ``wait_for`` lists only upstreams already final and COMPLETED or FAILED (``allow_failure``):
  it never blocks, it only makes the UI draw the edge;
- ops that never run still get a task run, a cheap marker whose final state says why:
  Completed named ``Skipped``, Cancelled named ``UpstreamFailed``, Cancelled (``stopped`` by
  early stopping), or Failed (a ref, a condition or a param that cannot be resolved);
- job ops are task runs named after the op; nested DAGs and matrix ops are subflows, run inside
  a task so that they run concurrently with their siblings.

The DAG ends ``failed`` if an op failed, ``stopped`` if every op was stopped, else
``succeeded`` (or what early stopping decided), and the flow run's state says the same.
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefect import Task, allow_failure, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, StateType

from polyaxon_prefect.dag._plan import DagPlan, child_loaded, plan_dag
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.dag._triggers import DONE_STATUSES, decide
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect import _live
from polyaxon_prefect.prefect._dispatch import OpRequest, request_flow
from polyaxon_prefect.prefect._job import (
    OpOutcome,
    OutcomeCallback,
    _execute,
    flow_name,
    job_task_options,
    polyaxon_status,
    state_for_status,
)
from polyaxon_prefect.runtime import RunContext, merge_params, new_run_context
from polyaxon_prefect.runtime._job import PreparedJob, prepare_job
from polyaxon_prefect.runtime._kind import op_kind
from polyaxon_prefect.runtime._masking import mask_text
from polyaxon_prefect.runtime._session import stop_reason, stop_requested

__all__ = ["dag_final_status", "run_dag_in_flow", "stop_op"]

MARKER_TASK_NAME = "dag_op_marker"
SUBFLOW_TASK_NAME = "run_subflow_op"
_POLL_SECONDS = 0.25

# ----------------------------------------------------------------------------- stopping one op

_RUNNING: dict[str, _Scheduler] = {}
_RUNNING_LOCK = threading.Lock()


def stop_op(op_name: str, dag_uuid: str | None = None) -> bool:
    """Stop the op ``op_name`` of a DAG running in this process (every running DAG with such an
    op when ``dag_uuid`` is None): a running op's process is stopped, a pending one never
    starts; either way it ends ``stopped`` and its downstream ops follow their triggers.

    Returns whether such an op was found (not yet finished).
    """
    with _RUNNING_LOCK:
        schedulers = [s for key, s in _RUNNING.items() if dag_uuid in (None, key)]
    return any([scheduler.stop_one(op_name) for scheduler in schedulers])


# ----------------------------------------------------------------------------- final status


def dag_final_status(statuses: Mapping[str, str]) -> str:
    """Polyaxon's pipeline status from its ops' final statuses.

    ``failed`` if any op failed (``upstream_failed`` alone does not fail the DAG: an
    ``all_failed`` clean-up op over successful ops is a branch not taken), ``stopped`` if every
    op was stopped, else ``succeeded``.
    """
    values = list(statuses.values())
    if any(s == "failed" for s in values):
        return "failed"
    if values and all(s == "stopped" for s in values):
        return "stopped"
    return "succeeded"


# ----------------------------------------------------------------------------- markers


def _marker_task(op_name: str, status: str, message: str) -> Any:
    def dag_op_marker() -> State:
        return state_for_status(status, message)

    return task(
        dag_op_marker,
        name=MARKER_TASK_NAME,
        task_run_name=flow_name(op_name),
        cache_policy=NO_CACHE,
        persist_result=False,
    )


# ----------------------------------------------------------------------------- job tasks

_JOBS: dict[str, tuple[PreparedJob, threading.Event]] = {}
_JOB_TASKS: dict[tuple[Any, ...], Task[..., Any]] = {}
_JOB_TASKS_LOCK = threading.Lock()


def run_job_op(name: str, run: str) -> Any:
    """The body of a DAG job op's task run: ``name`` names the task run (the op), ``run`` is
    the op's run uuid, the key of its prepared job (never a parameter: its env has secrets)."""
    job, cancel = _JOBS[run]
    return _execute(job, cancel)


def _shared_job_task(job: PreparedJob) -> Task[..., Any]:
    """One task object per distinct set of options, shared by the ops of every DAG run.

    A task object per op (`job_task`) would do the same, but building one costs Prefect a
    ``inspect.getsource`` (file stats and tokenizing) on the scheduler's thread: a few
    milliseconds per op, most of the scheduler's own overhead on a DAG of short jobs. The
    options are the ones `job_task` sets: retries and tags (the op cache is looked up in the body).
    """
    key = (max(int(job.max_retries or 0), 0), tuple(job.tags))
    with _JOB_TASKS_LOCK:
        shared = _JOB_TASKS.get(key)
        if shared is None:
            options = job_task_options(job)
            options["task_run_name"] = "{name}"
            shared = _JOB_TASKS[key] = task(run_job_op, **options)
    return shared


class _JobTask:
    """``submit`` a job op on its shared task; the job is registered until it is collected."""

    def __init__(self, job: PreparedJob, cancel: threading.Event) -> None:
        self.job = job
        self.key = job.context.uuid
        _JOBS[self.key] = (job, cancel)

    def submit(self, wait_for: list[Any]) -> Any:
        shared = _shared_job_task(self.job)
        return shared.submit(flow_name(self.job.op_name), self.key, wait_for=wait_for)

    def release(self) -> None:
        _JOBS.pop(self.key, None)


# ----------------------------------------------------------------------------- the scheduler


@dataclass
class _Running:
    """An op in flight: its future, how to stop it, and what a subflow op reported."""

    future: Any
    cancel: threading.Event
    kind: str
    inputs: dict[str, Any]
    context: RunContext | None
    started_at: float
    outcomes: list[OpOutcome] = field(default_factory=list)
    runner: Any = None


def _dag_inputs(request: OpRequest) -> dict[str, Any]:
    operation = request.operation
    return merge_params(
        operation.component, operation, request.loaded.params or {}, request.params or {}
    )


def _new_context(name: str) -> RunContext:
    return new_run_context(name).make_dirs()


def _render_flag(value: Any, inputs: Mapping[str, Any]) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    from polyaxon_prefect.loading._render import ParamValue, build_context, render_bool

    context = build_context({k: ParamValue(value=v) for k, v in inputs.items()})
    return bool(render_bool(value, context))


def _problem_text(error: Exception) -> str:
    problems = getattr(error, "problems", None)
    if problems:
        return "; ".join(getattr(p, "message", str(p)) for p in problems)
    return str(error)


class _Scheduler:
    """One DAG run: decide, launch, collect, until every op is done."""

    def __init__(self, request: OpRequest, plan: DagPlan, inputs: dict[str, Any]) -> None:
        from polyaxon_prefect.dag._resolve import DagScope

        self.request = request
        self.plan = plan
        self.inputs = inputs
        self.context = request.run_context or _new_context(request.op_name)
        self.dag_name = request.op_name
        self.logger = get_run_logger()
        self.statuses: dict[str, str | None] = dict.fromkeys(plan.order)
        self.records: dict[str, OpRecord] = {}
        self.handles: dict[str, Any] = {}  # op -> final future or marker state (for edges)
        self.running: dict[str, _Running] = {}
        self.done_queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.stop_requests: set[str] = set()
        self.lock = threading.Lock()
        self.stop_reason = ""
        self.stop_status: str | None = None
        self._scope_type = DagScope
        self.extras: dict[str, dict[str, Any]] = {}

    # -- scope and edges ------------------------------------------------------------------
    def scope(self) -> Any:
        return self._scope_type(
            inputs=self.inputs, globals=self.context.globals_dict(), records=dict(self.records)
        )

    def wait_for(self, name: str) -> list[Any]:
        """Upstreams already final and COMPLETED/FAILED: edges for the UI, never a wait."""
        edges: list[Any] = []
        for upstream in self.plan.upstreams.get(name, ()):
            handle = self.handles.get(upstream)
            if handle is None:
                continue
            state = handle if isinstance(handle, State) else handle.state
            if state is not None and state.type in (StateType.COMPLETED, StateType.FAILED):
                edges.append(allow_failure(handle))
        return edges

    # -- stopping -------------------------------------------------------------------------
    def stop_one(self, name: str) -> bool:
        with self.lock:
            if name not in self.statuses or self.statuses[name] in DONE_STATUSES:
                return False
            self.stop_requests.add(name)
            running = self.running.get(name)
        if running is not None:
            running.cancel.set()
        self.done_queue.put("")  # wake the loop
        return True

    def stop_all(self, status: str, reason: str) -> None:
        if self.stop_status is not None:
            return
        self.stop_status, self.stop_reason = status, reason
        self.logger.warning("stopping the dag: %s", reason)
        for running in list(self.running.values()):
            running.cancel.set()

    # -- finishing ops --------------------------------------------------------------------
    def finish(self, name: str, record: OpRecord) -> None:
        self.records[name] = record
        with self.lock:
            self.statuses[name] = record.status
        _live.notify(self.dag_name, name, record.status)
        text = f"op `{name}`: {record.status}"
        if record.message and record.status not in ("succeeded",):
            text += f" ({record.message})"
        if record.status == "failed":
            self.logger.error(text)
        else:
            self.logger.info(text)

    def mark(self, name: str, status: str, message: str, **record: Any) -> None:
        """End ``name`` without running it: a marker task run in the final state."""
        state = _marker_task(name, status, message)(return_state=True, wait_for=self.wait_for(name))
        self.handles[name] = state
        now = time.time()
        self.finish(
            name,
            OpRecord(
                name=name,
                status=status,
                message=message,
                started_at=now,
                finished_at=now,
                kind=op_kind(self.plan.ops[name]),
                component=getattr(self.plan.ops[name].component, "name", None),
                **record,
            ),
        )

    def collect(self, name: str) -> None:
        """Read the final state of an op in flight (after ``wait()``) into its record."""
        running = self.running.pop(name)
        future = running.future
        future.wait()
        if isinstance(running.runner, _JobTask):
            running.runner.release()
        state = future.state
        self.handles[name] = future
        status = polyaxon_status(state)
        message = state.message or ""
        outputs: dict[str, Any] = {}
        metrics: dict[str, Any] = {}
        uuid = running.context.uuid if running.context else None
        artifacts_path = str(running.context.run_artifacts_path) if running.context else None
        extra: dict[str, Any] = {}
        if running.kind == "job":
            if status == "succeeded":
                payload = _state_value(state)
                if isinstance(payload, dict):
                    outputs = dict(payload.get("outputs") or {})
                    metrics = dict(payload.get("metrics") or {})
                    uuid = payload.get("uuid") or uuid
                    artifacts_path = payload.get("artifacts_path") or artifacts_path
                if state.name == "Cached":
                    message = f"cache hit: reused the outputs of run {uuid}"
        elif running.outcomes:
            outcome = running.outcomes[-1]
            status = outcome.status
            message = outcome.message or message
            outputs, metrics = dict(outcome.outputs), dict(outcome.metrics)
            uuid = outcome.uuid or uuid
            artifacts_path = outcome.artifacts_path or artifacts_path
            for key in ("ops", "trials", "best"):
                if getattr(outcome, key) is not None:
                    extra[key] = getattr(outcome, key)
        if name in self.stop_requests and status == "stopped":
            message = message or "stopped"
        globals_ = running.context.globals_dict() if running.context else {}
        if uuid:
            globals_["uuid"] = uuid
        self.finish(
            name,
            OpRecord(
                name=name,
                status=status,
                uuid=uuid,
                inputs=running.inputs,
                outputs=outputs,
                metrics=metrics,
                globals=globals_,
                artifacts_path=artifacts_path,
                message=message,
                started_at=running.started_at,
                finished_at=time.time(),
                kind=running.kind,
                component=getattr(self.plan.ops[name].component, "name", None),
            ),
        )
        self.extras[name] = extra

    # -- launching ------------------------------------------------------------------------
    def child_context(self, name: str) -> RunContext:
        parent = self.context
        return new_run_context(
            name,
            parent.project_name,
            artifacts_root=parent.artifacts_root,
            owner_name=parent.owner_name,
            username=parent.username,
            is_independent=False,
        )

    def runner(
        self, name: str, op: Any, params: dict[str, Any]
    ) -> tuple[Any, list[OpOutcome], str, RunContext, threading.Event]:
        """The task to submit for ``op``: its job's task, or a task running its subflow."""
        kind = op_kind(op)
        context = self.child_context(name)
        cancel = threading.Event()
        request = self.request
        loaded = child_loaded(request.loaded, op)
        if kind == "job":
            job = prepare_job(
                loaded,
                run_context=context,
                params=params,
                connections=request.connections,
                in_pipeline=True,
                skip_builds=request.skip_builds,
                base_dir=request.base_dir,
            )
            return _JobTask(job, cancel), [], kind, context, cancel
        child = OpRequest(
            loaded=loaded,
            params=params,
            run_context=context.make_dirs(),
            connections=request.connections,
            skip_builds=request.skip_builds,
            in_pipeline=True,
            base_dir=request.base_dir,
            name=name,
            cancel_event=cancel,
            sweep=request.sweep,
        )
        runner, outcomes = _subflow_task(name, child)
        return runner, outcomes, kind, context, cancel

    def launch(self, name: str) -> None:
        """Resolve the op's params and conditions, then submit it (or mark why not)."""
        from polyaxon_prefect.dag._conditions import ConditionError, evaluate_conditions
        from polyaxon_prefect.dag._resolve import resolve_params

        op = self.plan.ops[name]
        scope = self.scope()
        # Markers are created outside `except` blocks: Prefect would log the exception being
        # handled as the marker's traceback.
        problem = ""
        try:
            params = resolve_params(op, scope)
        except PolyaxonPrefectError as error:
            problem = f"cannot resolve the params of `{name}`: " + _problem_text(error)
        if problem:
            self.mark(name, "failed", problem)
            return
        outputs = {io.name for io in op.component.outputs or []}
        params = {k: v for k, v in params.items() if not (v is None and k in outputs)}
        verdict: tuple[str, str] | None = None
        if op.conditions:
            try:
                if not evaluate_conditions(op, params, scope):
                    verdict = ("skipped", f"conditions `{op.conditions}` are false")
            except ConditionError as error:
                verdict = ("failed", str(error))
        if verdict is not None:
            self.mark(name, verdict[0], verdict[1], inputs=params)
            return
        try:
            runner, outcomes, kind, context, cancel = self.runner(name, op, params)
        except PolyaxonPrefectError as error:
            verdict = ("failed", _problem_text(error))
        if verdict is not None:
            self.mark(name, verdict[0], verdict[1], inputs=params)
            return
        future = runner.submit(wait_for=self.wait_for(name))
        running = _Running(future, cancel, kind, params, context, time.time(), outcomes, runner)
        with self.lock:
            self.running[name] = running
            if name in self.stop_requests:
                cancel.set()
        _live.notify(self.dag_name, name, "running")
        future.add_done_callback(lambda _f, n=name: self.done_queue.put(n))

    # -- the loop -------------------------------------------------------------------------
    def advance(self) -> None:
        """Decide every undecided op, in topological order (so a marker's downstreams see it)."""
        limit = self.plan.concurrency
        for name in self.plan.order:
            if self.statuses[name] is not None or name in self.running:
                continue
            if self.stop_status is not None:
                self.mark(name, "stopped", f"stopped before it started: {self.stop_reason}")
                continue
            if name in self.stop_requests:
                self.mark(name, "stopped", "stopped before it started")
                continue
            op = self.plan.ops[name]
            upstream = [self.statuses[u] for u in self.plan.upstreams.get(name, ())]
            problem = ""
            try:
                skip_flag = _render_flag(op.skip_on_upstream_skip, self.inputs)
                decision = decide(op.trigger, upstream, skip_on_upstream_skip=skip_flag)
            except (ValueError, PolyaxonPrefectError) as error:
                problem = str(error)
            if problem:
                self.mark(name, "failed", problem)
                continue
            if decision == "wait":
                continue
            if decision == "skip":
                self.mark(name, "skipped", "skipped because an upstream op was skipped")
            elif decision == "upstream_failed":
                trigger = op.trigger or "all_succeeded"
                ups = ", ".join(
                    f"{u}: {self.statuses[u]}" for u in self.plan.upstreams.get(name, ())
                )
                self.mark(name, "upstream_failed", f"trigger `{trigger}` cannot be met ({ups})")
            elif limit is None or len(self.running) < limit:
                self.launch(name)

    def check_early_stopping(self) -> None:
        if not self.plan.early_stopping or self.stop_status is not None:
            return
        from polyaxon_prefect.search._stopping import RunSummary, check_early_stopping

        finished = [
            RunSummary(r.status, {**_numbers(r.outputs), **dict(r.metrics)})
            for r in self.records.values()
        ]
        try:
            decision = check_early_stopping(self.plan.early_stopping, finished, len(self.plan.ops))
        except ValueError as error:
            self.logger.warning("early stopping not checked: %s", error)
            return
        if decision is not None:
            self.stop_all(decision.status, decision.reason)

    def run(self) -> None:
        outer_cancel = self.request.cancel_event
        with _registered(self):
            try:
                while True:
                    self.check_early_stopping()
                    self.advance()
                    self.check_early_stopping()
                    if self.stop_status is not None:
                        self.advance()  # mark what has not started
                    if not self.running:
                        # Nothing in flight: every op is decided (with a valid plan, an
                        # undecided op here would wait forever: fail it rather than hang).
                        for name, status in self.statuses.items():
                            if status is None:
                                self.mark(name, "failed", "the scheduler could not decide it")
                        return
                    try:
                        name = self.done_queue.get(timeout=_POLL_SECONDS)
                    except queue.Empty:
                        name = ""
                    if outer_cancel is not None and outer_cancel.is_set():
                        self.stop_all("stopped", "the dag was stopped")
                    elif stop_requested() and self.stop_status is None:
                        self.stop_all("stopped", stop_reason() or "the dag was stopped")
                    if name and name in self.running:
                        self.collect(name)
            finally:
                for running in self.running.values():
                    running.cancel.set()
                for name in list(self.running):
                    with contextlib.suppress(Exception):
                        self.collect(name)


def _state_value(state: State) -> Any:
    """A completed task's return value: read from the in-memory result record when there is
    one (``state.result()`` would hop through Prefect's event-loop thread: about a millisecond
    per op on the scheduler's single thread), else through Prefect (a persisted result)."""
    from prefect.results import ResultRecord

    data = state.data
    if isinstance(data, ResultRecord):
        return data.result
    return state.result(raise_on_failure=False)


def _numbers(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


@contextlib.contextmanager
def _registered(scheduler: _Scheduler) -> Iterator[None]:
    key = scheduler.context.uuid
    with _RUNNING_LOCK:
        _RUNNING[key] = scheduler
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(key, None)


def _subflow_task(name: str, child: OpRequest) -> tuple[Any, list[OpOutcome]]:
    """A task that runs ``child`` (a nested DAG or a sweep) as a subflow and ends in the state
    matching the child's Polyaxon status (a subflow's own state cannot be returned as is)."""
    outcomes: list[OpOutcome] = []

    def run_subflow_op() -> State:
        child_flow = request_flow(child, on_outcome=outcomes.append)
        state = child_flow(return_state=True)
        if outcomes:
            outcome = outcomes[-1]
            message = outcome.message or outcome.status
            return state_for_status(outcome.status, message, outcome.outputs)
        return state_for_status(polyaxon_status(state), state.message or "")

    runner = task(
        run_subflow_op,
        name=SUBFLOW_TASK_NAME,
        task_run_name=flow_name(name),
        cache_policy=NO_CACHE,
        persist_result=False,
    )
    return runner, outcomes


# ----------------------------------------------------------------------------- outputs


def _dag_outputs(request: OpRequest, scheduler: _Scheduler) -> dict[str, Any]:
    """The DAG component's declared outputs: a param of the DAG op that refs an op's output
    (``ref: ops.X, value: outputs.Y``), else the value of the same name from the last op (in
    topological order) that succeeded with it."""
    component = request.operation.component
    outputs: dict[str, Any] = {}
    params = request.operation.params or {}
    for io in component.outputs or []:
        param = params.get(io.name)
        ref = getattr(param, "ref", None)
        if isinstance(ref, str) and ref.startswith("ops."):
            record = scheduler.records.get(ref[4:])
            value = getattr(param, "value", None)
            if record is not None and isinstance(value, str) and value.startswith("outputs."):
                key = value[len("outputs.") :]
                if key in record.outputs:
                    outputs[io.name] = record.outputs[key]
            continue
        for name in reversed(scheduler.plan.order):
            record = scheduler.records.get(name)
            if record and record.status == "succeeded" and io.name in record.outputs:
                outputs[io.name] = record.outputs[io.name]
                break
    return outputs


def _ops_table(scheduler: _Scheduler) -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] = {}
    for name in scheduler.plan.order:
        record = scheduler.records.get(name)
        entry: dict[str, Any] = {
            "status": record.status if record else scheduler.statuses[name],
            "outputs": dict(record.outputs) if record else {},
            "uuid": record.uuid if record else None,
            "message": record.message if record else "",
        }
        entry.update(scheduler.extras.get(name, {}))
        ops[name] = entry
    return ops


# ----------------------------------------------------------------------------- the artifact


def _cell(text: Any) -> str:
    return mask_text(str(text)).replace("|", "\\|").replace("\n", " ")[:200]


def dag_markdown(
    name: str, status: str, plan: DagPlan, ops: Mapping[str, Mapping[str, Any]], reason: str = ""
) -> str:
    """The DAG as Markdown: ops with trigger, upstreams and final status, then the edges."""
    lines = [f"# DAG `{name}`: {status}", ""]
    if reason:
        lines += [f"Stopped early: {reason}", ""]
    lines += ["| op | kind | trigger | upstreams | status | message |", "|---|---|---|---|---|---|"]
    for op_name in plan.order:
        op = plan.ops[op_name]
        entry = ops.get(op_name, {})
        ups = ", ".join(plan.upstreams.get(op_name, ())) or "-"
        lines.append(
            f"| `{op_name}` | {op_kind(op)} | {op.trigger or 'all_succeeded'} | {ups} | "
            f"**{entry.get('status')}** | {_cell(entry.get('message') or '')} |"
        )
    edges = [(u, d) for d in plan.order for u in plan.upstreams.get(d, ())]
    lines += ["", "## Edges", ""]
    lines += [f"- `{u}` -> `{d}`" for u, d in edges] or ["(none)"]
    return "\n".join(lines) + "\n"


def _artifact_key(name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return f"{slug or 'dag'}-dag"


# ----------------------------------------------------------------------------- entry point


def run_dag_in_flow(request: OpRequest, on_outcome: OutcomeCallback | None = None) -> Any:
    """Run the DAG of ``request`` inside the current flow run; return what the flow returns.

    That is the DAG's outputs when it succeeded, else a final state (Failed, Cancelled) with a
    summary; ``on_outcome`` receives one `OpOutcome` with ``ops`` (every op's status, outputs,
    uuid and message).
    """
    from prefect.artifacts import create_markdown_artifact

    inputs = _dag_inputs(request)
    plan = plan_dag(request.operation, params=inputs)
    scheduler = _Scheduler(request, plan, inputs)
    logger = scheduler.logger
    logger.info(
        "dag `%s` (run %s): %d ops%s",
        scheduler.dag_name,
        scheduler.context.uuid,
        len(plan.ops),
        f", concurrency {plan.concurrency}" if plan.concurrency else "",
    )
    _live.start(scheduler.dag_name, plan.order)
    scheduler.run()
    statuses = {name: str(s) for name, s in scheduler.statuses.items()}
    status = scheduler.stop_status or dag_final_status(statuses)
    if scheduler.stop_status == "succeeded" and dag_final_status(statuses) == "failed":
        status = "failed"
    ops = _ops_table(scheduler)
    outputs = _dag_outputs(request, scheduler) if status == "succeeded" else {}
    counts: dict[str, int] = {}
    for value in statuses.values():
        counts[value] = counts.get(value, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    failed = [n for n, s in statuses.items() if s == "failed"]
    message = f"dag `{scheduler.dag_name}` {status}: {summary}"
    if failed:
        message += "; failed: " + ", ".join(failed)
    if scheduler.stop_reason:
        message += f"; {scheduler.stop_reason}"
    try:
        create_markdown_artifact(
            dag_markdown(scheduler.dag_name, status, plan, ops, scheduler.stop_reason),
            key=_artifact_key(scheduler.dag_name),
            description=f"ops of dag `{scheduler.dag_name}` (run {scheduler.context.uuid})",
        )
    except Exception as exc:  # a view: never fail the DAG for it
        logger.warning("could not create the dag artifact: %s", exc)
    _live.finish(scheduler.dag_name, status)
    outcome = OpOutcome(
        status,
        outputs=outputs,
        message=message,
        uuid=scheduler.context.uuid,
        artifacts_path=str(scheduler.context.run_artifacts_path),
        ops=ops,
        reason=scheduler.stop_reason,
    )
    if on_outcome is not None:
        on_outcome(outcome)
    if status == "succeeded":
        return outputs
    return state_for_status(status, message)
