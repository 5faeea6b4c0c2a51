"""A DAG operation as one Prefect flow run: submit what `DagRun` decides, feed back what ends.

Prefect 3 has no trigger rules and no Skipped state, and its own dependency handling parks a
task whose upstream crashed or was cancelled in a ``Pending/NotReady`` state forever. So the
decisions are made on Polyaxon statuses by the pure `polyaxon_prefect.dag.DagRun`, and Prefect
only runs what was decided (the design prefect-dbt ships for dbt graphs):

- a `Launch` is submitted as the op's task (a job's task run, or a task running a nested DAG or
  a sweep as a subflow, so that it runs concurrently with its siblings); each finished future
  feeds a queue through a done-callback, and its state is read only after ``fut.wait()``;
- ``wait_for`` lists only upstreams already final and COMPLETED or FAILED (``allow_failure``):
  it never blocks, it only makes the UI draw the edge;
- a `Mark` (an op that never runs) still gets a task run, a cheap marker whose final state says
  why: Completed named ``Skipped``, Cancelled named ``UpstreamFailed``, Cancelled (stopped), or
  Failed (a ref, a condition or a param that cannot be resolved).

A server that stops answering mid-run (`_server_watch.server_gone`) stops the DAG as a stop
does, less the cancel: the ops running go on to their end and keep their true statuses, the
ops not started end ``stopped`` with the reason (``restart`` runs from the first of them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prefect import Task, allow_failure, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, StateType

from polyaxon_prefect.dag import reused_ops, uncached_ops
from polyaxon_prefect.dag._plan import DagPlan, child_loaded, plan_dag
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.dag._report import (
    dag_final_status,
    dag_gpu_hours,
    dag_markdown,
    dag_summary,
    ops_table,
)
from polyaxon_prefect.dag._scheduler import DagRun, Launch, Mark, problem_text
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect._artifacts import artifact_key, markdown_artifact
from polyaxon_prefect.prefect._job_flow import OutcomeCallback, flow_name
from polyaxon_prefect.prefect._request import Children, FlowValue, OpRequest, OpTask
from polyaxon_prefect.prefect._states import state_for_status
from polyaxon_prefect.prefect.runs._record import OpsFile
from polyaxon_prefect.prefect.server._server_watch import server_gone
from polyaxon_prefect.prefect.watch import _live
from polyaxon_prefect.runtime import (
    ChildIndex,
    RunContext,
    forget_serving,
    merge_params,
    new_run_context,
    on_serving,
    short_code,
)
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.logs._masking import text_masker
from polyaxon_prefect.runtime.session._session import stop_reason, stop_requested
from polyaxon_prefect.specs import Status, is_service_op, op_kind

__all__ = ["dag_final_status", "dag_markdown", "dags_deciding", "run_dag_in_flow", "stop_op"]

MARKER_TASK_NAME = "dag_op_marker"
_SERVING = "\0serving:"
"""Prefix of a done-queue item saying a service op serves (its dependents may start)."""
_POLL_SECONDS = 0.25
_OPS_WRITE_SECONDS = 1.0
"""The least time between two writes of a running DAG's ``ops.json``."""

_RUNNING: dict[str, _DagFlow] = {}
_RUNNING_LOCK = threading.Lock()


def stop_op(op_name: str, dag_uuid: str | None = None) -> bool:
    """Stop the op ``op_name`` of a DAG running in this process (every running DAG with such an
    op when ``dag_uuid`` is None): a running op's process is stopped, a pending one never
    starts; either way it ends ``stopped`` and its downstream ops follow their triggers.

    Returns whether such an op was found (not yet finished).
    """
    with _RUNNING_LOCK:
        runs = [run for key, run in _RUNNING.items() if dag_uuid in (None, key)]
    return any([run.stop_one(op_name) for run in runs])


def dags_deciding(within: float) -> bool:
    """Whether a DAG of this process took a step of its loop in the last ``within`` seconds
    while it could still end by itself: the CLI whose server went away waits for its result
    (an op just ended, the next ones being marked) instead of taking its quiet for the end."""
    now = time.monotonic()
    with _RUNNING_LOCK:
        return any(now - run.beat < within for run in _RUNNING.values())


def _marker_task(op_name: str, status: str, message: str) -> Task[[], State]:
    def dag_op_marker() -> State:
        return state_for_status(status, message)

    return task(
        name=MARKER_TASK_NAME,
        task_run_name=flow_name(op_name),
        cache_policy=NO_CACHE,
        persist_result=False,
    )(dag_op_marker)


@dataclass
class _Flight:
    """An op in flight: its task, its future, how to stop it."""

    op_task: OpTask
    future: Any
    cancel: threading.Event
    inputs: dict[str, Any]
    context: RunContext
    started_at: float
    in_process: bool = True
    """A job op (its process runs here, with or without the server); else a subflow, whose
    flow run cannot end without the server."""


class _DagFlow:
    """One DAG run in the current flow run: apply `DagRun`'s actions, collect, until done."""

    def __init__(
        self, request: OpRequest, plan: DagPlan, inputs: dict[str, Any], children: Children
    ) -> None:
        self.request = request
        self.children = children
        self.context = request.run_context or new_run_context(request.op_name).make_dirs()
        self.dag = DagRun(plan, inputs, self.context.globals_dict())
        self.plan = plan
        self.name = request.op_name
        self.logger = get_run_logger()
        self.handles: dict[str, Any] = {}  # op -> final future or marker state (for edges)
        self.flights: dict[str, _Flight] = {}
        self.done_queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.lock = threading.Lock()
        reuse = request.reuse
        self.reused = reused_ops(reuse, plan.order, plan.downstreams) if reuse else {}
        """Ops not run again on a restart (``restart --from``): their earlier records."""
        self.rerun = uncached_ops(reuse, plan.downstreams) if reuse else set()
        """On a restart, the op it runs from and what follows, and the forced ops: they run,
        never from the cache."""
        self.reused_from: dict[str, str] = {}
        self.not_reused: set[str] = set()
        """Ops a restart could reuse that run again: their code changed, or an op upstream
        of them ran again (its outputs are their inputs)."""
        self.ops_written_at = -_OPS_WRITE_SECONDS
        self.ops_file = OpsFile(self.context.run_path)
        self.children_index = ChildIndex(self.context.run_path)
        """Each op started, for `logs` without the server (closed when the DAG ends)."""
        self.ended_services: set[str] = set()
        """Service ops this DAG stopped because its other ops were done."""
        self.beat = time.monotonic()
        """The last step of its loop that can lead to its end (`dags_deciding`)."""

    # -- edges ----------------------------------------------------------------------------
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
            if not self.dag.stop_op(name):
                return False
            flight = self.flights.get(name)
        if flight is not None:
            flight.cancel.set()
        self.done_queue.put("")  # wake the loop
        return True

    def stop_all(self, status: Status, reason: str) -> None:
        if self.dag.stop(status, reason):
            self._stopping(reason)

    def _stopping(self, reason: str) -> None:
        self.logger.warning("stopping the dag: %s", reason)
        for flight in list(self.flights.values()):
            flight.cancel.set()

    # -- applying actions -----------------------------------------------------------------
    def log_end(
        self, name: str, status: Status, message: str, cached_from: str = "", reused_from: str = ""
    ) -> None:
        _live.notify(self.name, name, status, cached_from, reused_from=reused_from)
        text = f"op `{name}`: {status}"
        if message and (reused_from or status != Status.SUCCEEDED):
            text += f" ({message})"
        (self.logger.error if status == Status.FAILED else self.logger.info)(text)

    def apply(self, action: Launch | Mark) -> None:
        if isinstance(action, Launch):
            self.launch(action)
            return
        marker = _marker_task(action.name, action.status, action.message)
        self.handles[action.name] = marker(return_state=True, wait_for=self.wait_for(action.name))
        self.write_ops()
        self.log_end(action.name, action.status, action.message)

    def launch(self, launch: Launch) -> None:
        name, params = launch.name, launch.params
        context = _child_context(name, self.context)
        cancel = threading.Event()
        child = self.request.with_(
            loaded=child_loaded(self.request.loaded, self.plan.ops[name]),
            params=params,
            run_context=context,
            in_pipeline=True,
            name=name,
            cancel_event=cancel,
            reuse=None,
            use_cache=self.request.use_cache and name not in self.rerun,
        )
        if name in self.reused:
            if not (self.upstream_ran(name) or self.code_changed(name, child)):
                self.reuse(name)
                return
            self.not_reused.add(name)  # it runs, through the op cache (its inputs in the key)
        self.children_index.record(name, context.uuid)
        problem = ""
        try:
            op_task = self.children.dag_op(child)
        except PolyaxonPrefectError as error:
            problem = problem_text(error)
        if problem:  # outside the `except`: Prefect would log it as the marker's traceback
            self.apply(self.dag.mark(name, Status.FAILED, problem, inputs=params))
            return
        if self.is_service(name):
            on_serving(context.uuid, functools.partial(self.done_queue.put, _SERVING + name))
        future = op_task.submit(wait_for=self.wait_for(name))
        in_process = self.children.runs_in_process(child)
        flight = _Flight(op_task, future, cancel, params, context, time.time(), in_process)
        with self.lock:
            self.flights[name] = flight
            if self.dag.ops[name].stop_requested:
                cancel.set()
        _live.notify(self.name, name, Status.RUNNING)
        future.add_done_callback(lambda _future: self.done_queue.put(name))

    def upstream_ran(self, name: str) -> bool:
        """Whether an op upstream of reusable op ``name`` ran again on this restart."""
        ran = [up for up in self.plan.upstreams.get(name, ()) if up in self.not_reused]
        if ran:
            self.logger.info("op `%s`: `%s` upstream of it ran again: it runs again", name, ran[0])
        return bool(ran)

    def code_changed(self, name: str, child: OpRequest) -> bool:
        """Whether job op ``name``'s code hash (`PreparedJob.code_hash`) is no longer the one
        its reused record ran with: then it runs again (a restart after an edit). An op whose
        record holds no hash (not a job, or not hashed) is reused as recorded."""
        earlier = self.reused[name].code
        if earlier is None or not self.children.runs_in_process(child):  # a job op
            return False
        try:
            now = child.prepare_job().code_hash
        except PolyaxonPrefectError:
            return True  # it runs, and its launch reports the problem
        if now == earlier:
            return False
        self.logger.info(
            "op `%s`: its code changed since run %s (code %s, now %s): it runs again",
            name,
            self.reused[name].uuid,
            short_code(earlier),
            short_code(now) if now else "not hashed",
        )
        return True

    def reuse(self, name: str) -> None:
        """Op ``name`` of a restarted DAG ends as it ended in the earlier run, without running:
        a marker task run says so (Completed, ``reused from run <uuid>``) and its recorded
        outputs, globals and artifacts feed the ops after it."""
        earlier = self.reused[name]
        source = earlier.uuid or "?"
        message = f"reused from run {source}"
        record = dataclasses.replace(earlier, message=message)
        marker = _marker_task(name, Status.SUCCEEDED, message)
        self.handles[name] = marker(return_state=True, wait_for=self.wait_for(name))
        self.reused_from[name] = source
        self.dag.finished(name, record, {"reused": True})
        self.write_ops()
        self.log_end(name, Status.SUCCEEDED, message, reused_from=source)

    def write_ops(self, *, final: bool = False) -> None:
        """The ops ended so far, in the DAG's run directory (what a restart reuses): at most
        once a second while ops end (a DAG of thousands of ops would rewrite it thousands of
        times), and once at the end; a killed DAG's last second of ends is run again."""
        now = time.monotonic()
        if not final and now - self.ops_written_at < _OPS_WRITE_SECONDS:
            return
        self.ops_written_at = now
        records = self.dag.records
        ordered = {name: records[name] for name in self.plan.order if name in records}
        self.ops_file.write(ordered, self.reused_from)

    def collect(self, name: str) -> None:
        """Read the final state of an op in flight (after ``wait()``) into its record."""
        flight = self.flights.pop(name)
        flight.future.wait()
        flight.op_task.release()
        forget_serving(flight.context.uuid)
        self.handles[name] = flight.future
        result: RunResult = flight.op_task.result(flight.future.state)
        if name in self.ended_services and result.status == Status.STOPPED:
            result = result.with_(message=f"stopped: the other ops of dag `{self.name}` are done")
        context = flight.context
        uuid = result.uuid or context.uuid
        globals_ = context.globals_dict()
        globals_["uuid"] = uuid
        op = self.plan.ops[name]
        record = OpRecord(
            name=name,
            status=Status(result.status),
            uuid=uuid,
            inputs=flight.inputs,
            outputs=dict(result.outputs),
            metrics=dict(result.metrics),
            globals=globals_,
            artifacts_path=result.artifacts_path or str(context.run_artifacts_path),
            message=result.message,
            started_at=flight.started_at,
            finished_at=time.time(),
            kind=op_kind(op),
            component=op.component.name if op.component is not None else None,
            code=result.code_hash,
        )
        detail = {
            key: getattr(result, key)
            for key in ("ops", "trials", "best", "gpu_hours")
            if getattr(result, key) is not None
        }
        self.dag.finished(name, record, detail)
        self.write_ops()
        self.log_end(name, record.status, record.message, uuid if result.cached else "")

    # -- services -------------------------------------------------------------------------
    def is_service(self, name: str) -> bool:
        return is_service_op(self.plan.ops[name])

    def stop_services_when_done(self) -> None:
        """A service op lives as long as its DAG's work: once only services are in flight and
        no other op can still start (none is waiting, or every service already serves), they
        are stopped and end ``stopped``, so the DAG ends instead of waiting on them."""
        if not self.flights or not all(self.is_service(n) for n in self.flights):
            return
        waiting = self.dag.waiting()
        if waiting and not all(self.dag.ops[n].serving for n in self.flights):
            return
        for name, flight in self.flights.items():
            if not flight.cancel.is_set():
                self.ended_services.add(name)
                self.logger.info(
                    "op `%s`: stopping the service, the dag's other ops are done", name
                )
                flight.cancel.set()

    # -- the loop -------------------------------------------------------------------------
    def advance(self) -> None:
        """Apply actions until `DagRun` has none (a failed launch may decide more ops)."""
        while actions := self.dag.next_actions():
            for action in actions:
                self.apply(action)

    def check_early_stopping(self) -> None:
        try:
            decision = self.dag.check_early_stopping()
        except ValueError as error:
            self.logger.warning("early stopping not checked: %s", error)
            return
        if decision is not None:
            self._stopping(decision.reason)

    def check_stop_request(self) -> None:
        outer_cancel = self.request.cancel_event
        if outer_cancel is not None and outer_cancel.is_set():
            self.stop_all(Status.STOPPED, "the dag was stopped")
        elif stop_requested() and self.dag.decision is None:
            self.stop_all(Status.STOPPED, stop_reason() or "the dag was stopped")
        else:
            _stop_if_server_gone(self)

    def run(self) -> None:
        with _registered(self):
            try:
                while True:
                    _step(self)
                    self.check_early_stopping()
                    self.advance()
                    self.check_early_stopping()
                    if self.dag.decision is not None:
                        self.advance()  # mark what has not started
                    if not self.flights:
                        for mark in self.dag.undecided():
                            self.apply(mark)
                        return
                    self.stop_services_when_done()
                    try:
                        name = self.done_queue.get(timeout=_POLL_SECONDS)
                    except queue.Empty:
                        name = ""
                    self.check_stop_request()
                    if name.startswith(_SERVING):
                        self.dag.serving(name[len(_SERVING) :])
                    elif name and name in self.flights:
                        self.collect(name)
            finally:
                for flight in self.flights.values():
                    flight.cancel.set()
                for name in list(self.flights):
                    with contextlib.suppress(Exception):
                        self.collect(name)
                self.write_ops(final=True)
                self.children_index.close()


def _stop_if_server_gone(run: _DagFlow) -> None:
    """The run's server went away: no op starts any more (`DagRun.stop`), but the ops running
    are not cancelled, they end as they end. No line of its own: the CLI said it, and each op
    not started says why."""
    gone = server_gone()
    if gone is not None and run.dag.decision is None and run.dag.waiting():
        run.dag.stop(Status.STOPPED, f"the Prefect server at {gone} stopped answering")


def _step(run: _DagFlow) -> None:
    """One turn of the DAG's loop: while the server is gone, only a job op in flight (or none:
    the DAG is about to end) can still bring the DAG to its end (`dags_deciding`)."""
    flights = run.flights.values()
    if server_gone() is None or not flights or any(f.in_process for f in flights):
        run.beat = time.monotonic()


def _child_context(name: str, parent: RunContext) -> RunContext:
    """An op's run: in the DAG's project, owner and artifacts root, not independent."""
    return new_run_context(
        name,
        parent.project_name,
        artifacts_root=parent.artifacts_root,
        owner_name=parent.owner_name,
        username=parent.username,
        is_independent=False,
    )


@contextlib.contextmanager
def _registered(run: _DagFlow) -> Iterator[None]:
    key = run.context.uuid
    with _RUNNING_LOCK:
        _RUNNING[key] = run
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(key, None)


def run_dag_in_flow(
    request: OpRequest, children: Children, on_outcome: OutcomeCallback | None = None
) -> FlowValue:
    """Run the DAG of ``request`` inside the current flow run; return what the flow returns.

    That is the DAG's outputs when it succeeded, else a final state (Failed, Cancelled) with a
    summary; ``on_outcome`` receives one `RunResult` with ``ops`` (every op's status, outputs,
    uuid and message). ``children`` runs the ops (the dispatcher).
    """
    inputs = merge_params(
        request.operation.component,
        request.operation,
        request.loaded.params or {},
        request.params or {},
    )
    plan = plan_dag(request.operation, params=inputs)
    run = _DagFlow(request, plan, inputs, children)
    run.logger.info(
        "dag `%s` (run %s): %d ops%s",
        run.name,
        run.context.uuid,
        len(plan.ops),
        f", concurrency {plan.concurrency}" if plan.concurrency else "",
    )
    _live.start(run.name, plan.order)
    run.run()
    dag = run.dag
    status = dag.final_status()
    statuses = {name: str(s) for name, s in dag.statuses.items()}
    ops = ops_table(plan, dag.records, dag.details())
    outputs = dag.outputs(request.operation) if status == Status.SUCCEEDED else {}
    message = dag_summary(run.name, status, statuses, dag.stop_reason)
    outcome = RunResult(
        status,
        uuid=run.context.uuid,
        name=run.name,
        outputs=outputs,
        message=message,
        artifacts_path=str(run.context.run_artifacts_path),
        ops=ops,
        reason=dag.stop_reason,
        gpu_hours=dag_gpu_hours(ops),
    )
    # Heard before anything more goes through the API, as a job's result is: with the server
    # gone mid-run, the CLI still ends with the ops' true statuses (the artifact below would
    # hang in the client's retries first).
    if on_outcome is not None:
        on_outcome(outcome)
    markdown_artifact(
        dag_markdown(
            run.name, status, plan, ops, dag.stop_reason, mask=text_masker(), outputs=outputs
        ),
        key=artifact_key(run.name, "dag", default="dag"),
        description=f"ops of dag `{run.name}` (run {run.context.uuid})",
    )
    _live.finish(run.name, status)
    if status == Status.SUCCEEDED:
        return outputs
    return state_for_status(status, message)
