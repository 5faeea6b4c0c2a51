"""One DAG run's decisions, without Prefect: which op starts, which is marked, and why.

`DagRun` holds one `OpState` per op and answers the scheduler's questions: what to do next
(`next_actions`: `Launch` an op with its resolved params, or `Mark` it with a final status it
gets without running), an op finished (`finished`), stop one op or the whole DAG (`stop_op`,
`stop`), early stopping, and the final status and outputs. The Prefect layer turns a `Launch`
into a submitted task run, a `Mark` into a marker task run, and feeds finished runs back; so
the trigger rules, conditions, refs and concurrency are unit-tested at unit speed.

Actions come in topological order, and a `Mark` is applied when it is returned, so the ops
after it in the same pass already see its status (a chain of skips is decided in one pass).

A pass looks only at the ops whose decision may have changed since the last one (an upstream
ended or serves, a stop was asked) and, while the concurrency allows, at the ops that were
ready but over the limit: a pass after each op's end costs what changed, not the op count (a
5,000-op fan-out rescanned every waiting op after every end).
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from polyaxon_prefect.dag._conditions import ConditionError, evaluate_conditions
from polyaxon_prefect.dag._plan import DagPlan
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.dag._report import dag_final_status, dag_outputs
from polyaxon_prefect.dag._resolve import DagScope, resolve_params
from polyaxon_prefect.dag._trigger_rules import decide
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.search._stopping import RunSummary, StopDecision, check_early_stopping
from polyaxon_prefect.specs import DONE_STATUSES, Status, op_kind

__all__ = ["DagRun", "Launch", "Mark", "OpState", "problem_text"]

_OVER_LIMIT = object()
"""`DagRun._decide`: the op could start, but the concurrency limit is reached."""


@dataclass(frozen=True)
class Launch:
    """Start op ``name`` with ``params`` (its refs resolved, its conditions true)."""

    name: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Mark:
    """Op ``name`` ends ``status`` without running (already recorded by the `DagRun`)."""

    name: str
    status: Status
    message: str


@dataclass
class OpState:
    """Where one op of the run stands."""

    status: Status | None = None
    """The final status, None while undecided or running."""
    running: bool = False
    serving: bool = False
    """A service op that serves: its dependents may start (it counts as succeeded for their
    triggers) while it keeps running."""
    stop_requested: bool = False
    record: OpRecord | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    """What a nested DAG or sweep reported (``ops``, ``trials``, ``best``)."""


def problem_text(error: Exception) -> str:
    """The messages of an error's problems (one line), or the error itself."""
    problems = getattr(error, "problems", None)
    if problems:
        return "; ".join(getattr(p, "message", str(p)) for p in problems)
    return str(error)


def _numbers(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


def _render_flag(value: object, inputs: Mapping[str, Any]) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    from polyaxon_prefect.loading._render import ParamValue, build_context, render_bool

    context = build_context({k: ParamValue(value=v) for k, v in inputs.items()})
    return bool(render_bool(value, context))


class DagRun:
    """The state of one DAG run and the decisions made on it (module docstring)."""

    def __init__(
        self, plan: DagPlan, inputs: Mapping[str, Any], globals_: Mapping[str, Any]
    ) -> None:
        self.plan = plan
        self.inputs = dict(inputs)
        self.globals = dict(globals_)
        self.ops: dict[str, OpState] = {name: OpState() for name in plan.order}
        self.decision: StopDecision | None = None
        self._records: dict[str, OpRecord] = {}  # in the order the ops finished
        self._in_flight = 0
        self._index = {name: i for i, name in enumerate(plan.order)}
        self._dirty: list[int] = list(range(len(plan.order)))
        """Topological indexes of the ops to decide again (a heap; an index may repeat)."""
        self._ready: list[int] = []
        """Ops whose trigger is met, not launched for the concurrency limit (a heap)."""

    # -- reading ------------------------------------------------------------------------
    @property
    def records(self) -> dict[str, OpRecord]:
        return dict(self._records)

    @property
    def statuses(self) -> dict[str, Status | None]:
        return {name: state.status for name, state in self.ops.items()}

    @property
    def running(self) -> list[str]:
        return [name for name, state in self.ops.items() if state.running]

    def waiting(self) -> bool:
        """Whether an op has neither started nor been decided yet."""
        return any(state.status is None and not state.running for state in self.ops.values())

    @property
    def stop_reason(self) -> str:
        return self.decision.reason if self.decision else ""

    def scope(self) -> DagScope:
        # a read-only view, not a copy: a scope is read at once, and a copy per launch cost
        # the op count per launch
        records = MappingProxyType(self._records)
        return DagScope(inputs=self.inputs, globals=self.globals, records=records)

    # -- deciding -----------------------------------------------------------------------
    def next_actions(self) -> list[Launch | Mark]:
        """Decide every undecided op, in topological order; `Launch` them while the
        concurrency allows (a launched op counts as running from now on).

        Only the ops whose decision may have changed are looked at (module docstring): an op
        not looked at would decide as it did last time (wait, or over the limit)."""
        actions: list[Launch | Mark] = []
        order = self.plan.order
        while True:
            index = self._next_index()
            if index is None:
                return actions
            name = order[index]
            state = self.ops[name]
            if state.status is not None or state.running:
                continue
            action = self._decide(name)
            if action is _OVER_LIMIT:
                heapq.heappush(self._ready, index)
                continue
            if isinstance(action, Launch):
                state.running = True
                self._in_flight += 1
            if isinstance(action, Launch | Mark):
                actions.append(action)

    def _next_index(self) -> int | None:
        """The next op to decide in topological order: a changed one, or, under the limit, a
        ready one (an index taken twice is skipped by its state, or decided the same)."""
        dirty, ready = self._dirty, self._ready
        if ready and not self._at_limit() and (not dirty or ready[0] <= dirty[0]):
            return heapq.heappop(ready)
        if dirty:
            return heapq.heappop(dirty)
        return None

    def _changed(self, names: Any) -> None:
        """Ops ``names`` are to be decided again at the next pass."""
        for name in names:
            heapq.heappush(self._dirty, self._index[name])

    def _rescan(self) -> None:
        """Every op is to be decided again (the whole DAG stops)."""
        self._dirty = list(range(len(self.plan.order)))

    def _status_for(self, upstream: str) -> Status | None:
        """An upstream's status for its dependents' triggers: a service that serves counts as
        succeeded (its dependents use it while it runs)."""
        state = self.ops[upstream]
        if state.status is None and state.serving:
            return Status.SUCCEEDED
        return state.status

    def serving(self, name: str) -> None:
        """Service op ``name`` serves: its dependents are decided as if it had succeeded."""
        state = self.ops.get(name)
        if state is not None and state.running:
            state.serving = True
            self._changed(self.plan.downstreams.get(name, ()))

    def _at_limit(self) -> bool:
        limit = self.plan.concurrency
        return limit is not None and self._in_flight >= limit

    def _decide(self, name: str) -> Launch | Mark | object | None:
        """`Launch`, `Mark`, None (its trigger waits) or `_OVER_LIMIT` (it could start)."""
        if self.decision is not None:
            return self.mark(name, Status.STOPPED, f"stopped before it started: {self.stop_reason}")
        if self.ops[name].stop_requested:
            return self.mark(name, Status.STOPPED, "stopped before it started")
        op = self.plan.ops[name]
        upstreams = self.plan.upstreams.get(name, ())
        try:
            skip_flag = _render_flag(op.skip_on_upstream_skip, self.inputs)
            decision = decide(
                op.trigger,
                [self._status_for(u) for u in upstreams],
                skip_on_upstream_skip=skip_flag,
            )
        except (ValueError, PolyaxonPrefectError) as error:
            return self.mark(name, Status.FAILED, str(error))
        if decision == "wait":
            return None
        if decision == "skip":
            return self.mark(name, Status.SKIPPED, "skipped because an upstream op was skipped")
        if decision == "upstream_failed":
            trigger = op.trigger or "all_succeeded"
            ups = ", ".join(f"{u}: {self.ops[u].status}" for u in upstreams)
            return self.mark(
                name, Status.UPSTREAM_FAILED, f"trigger `{trigger}` cannot be met ({ups})"
            )
        if self._at_limit():  # before resolving anything: a waiting op is decided later
            return _OVER_LIMIT
        return self._launch(name)

    def _launch(self, name: str) -> Launch | Mark:
        """Resolve the op's params and conditions: a `Launch`, or a `Mark` saying why not."""
        op = self.plan.ops[name]
        scope = self.scope()
        try:
            params = resolve_params(op, scope)
        except PolyaxonPrefectError as error:
            message = f"cannot resolve the params of `{name}`: " + problem_text(error)
            return self.mark(name, Status.FAILED, message)
        outputs = {io.name for io in (op.component.outputs if op.component else None) or []}
        params = {k: v for k, v in params.items() if not (v is None and k in outputs)}
        if op.conditions:
            try:
                if not evaluate_conditions(op, params, scope):
                    message = f"conditions `{op.conditions}` are false"
                    return self.mark(name, Status.SKIPPED, message, inputs=params)
            except ConditionError as error:
                return self.mark(name, Status.FAILED, str(error), inputs=params)
        return Launch(name, params)

    # -- recording ----------------------------------------------------------------------
    def mark(self, name: str, status: Status, message: str, **record: Any) -> Mark:
        """End ``name`` without running it (also for an op that could not be started)."""
        now = time.time()
        op = self.plan.ops[name]
        self.finished(
            name,
            OpRecord(
                name=name,
                status=status,
                message=message,
                started_at=now,
                finished_at=now,
                kind=op_kind(op),
                component=op.component.name if op.component else None,
                **record,
            ),
        )
        return Mark(name, status, message)

    def finished(
        self, name: str, record: OpRecord, detail: Mapping[str, Any] | None = None
    ) -> None:
        """Op ``name`` ended as ``record`` (``detail``: a nested DAG's or sweep's report)."""
        state = self.ops[name]
        if state.stop_requested and record.status == Status.STOPPED and not record.message:
            record = dataclasses.replace(record, message="stopped")
        if state.running:
            self._in_flight -= 1
        state.status, state.running, state.record = record.status, False, record
        state.detail = dict(detail or {})
        self._records[name] = record
        self._changed(self.plan.downstreams.get(name, ()))

    def undecided(self) -> list[Mark]:
        """With nothing in flight, an op still undecided would wait forever (a plan that the
        validation let through): fail it rather than hang."""
        return [
            self.mark(name, Status.FAILED, "the scheduler could not decide it")
            for name, state in self.ops.items()
            if state.status is None and not state.running
        ]

    # -- stopping -----------------------------------------------------------------------
    def stop_op(self, name: str) -> bool:
        """Ask op ``name`` to stop: a pending op never starts, a running one is to be cancelled
        by the caller. Returns whether the op exists and is not done."""
        state = self.ops.get(name)
        if state is None or state.status in DONE_STATUSES:
            return False
        state.stop_requested = True
        self._changed((name,))
        return True

    def stop(self, status: Status, reason: str) -> bool:
        """Stop the whole DAG (once): nothing more starts; returns whether this call decided."""
        if self.decision is not None:
            return False
        self.decision = StopDecision(reason=reason, status=status)
        self._rescan()
        return True

    def check_early_stopping(self) -> StopDecision | None:
        """The DAG's ``earlyStopping`` policies over the ops finished so far (applied)."""
        if not self.plan.early_stopping or self.decision is not None:
            return None
        finished = [
            RunSummary(r.status, {**_numbers(r.outputs), **dict(r.metrics)})
            for r in self._records.values()
        ]
        decision = check_early_stopping(self.plan.early_stopping, finished, len(self.plan.ops))
        if decision is not None:
            self.stop(decision.status, decision.reason)
        return decision

    # -- the end ------------------------------------------------------------------------
    def final_status(self) -> Status:
        """The decision's status (early stopping, a stop), else from the ops' statuses; an
        op that failed fails the DAG even when a metric target was reached."""
        statuses = {name: str(s) for name, s in self.statuses.items()}
        computed = dag_final_status(statuses)
        if self.decision is None:
            return computed
        if self.decision.status == Status.SUCCEEDED and computed == Status.FAILED:
            return Status.FAILED
        return self.decision.status

    def outputs(self, operation: object) -> dict[str, Any]:
        """The DAG component's declared outputs (see `dag_outputs`)."""
        return dag_outputs(operation, self.plan, self._records)

    def details(self) -> dict[str, dict[str, Any]]:
        return {name: state.detail for name, state in self.ops.items() if state.detail}
