"""A sweep's bookkeeping and reports, without Prefect: names, what ended, when to stop, results.

The Prefect layer (`polyaxon_prefect.prefect.sweep._sweep_flow`) owns the thread pool, the trials'
flow runs and the artifacts; what those show and decide is computed here: a trial's name, the study
prefix that ``--resume`` finds, the status a finished trial is told as, early stopping over the
trials so far, the sweep's final status and message, the leaderboard rows and the best trial's
Markdown.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from polyaxon_prefect.client import (
    DATA_HEADING,
    DISPLAY_DIGITS,
    display,
    read_data_section,
    trial_results,
)
from polyaxon_prefect.client import FENCE as _FENCE
from polyaxon_prefect.search._stopping import RunSummary, StopDecision, check_early_stopping
from polyaxon_prefect.specs import DONE_STATUSES, Operation, Param, Status, slug

__all__ = [
    "DATA_HEADING",
    "DISPLAY_DIGITS",
    "LEADERBOARD_ROWS",
    "UUID_CHARS",
    "SweepRun",
    "best_markdown",
    "data_section",
    "display",
    "finite",
    "jsonable",
    "leaderboard_rows",
    "read_data_section",
    "study_prefix",
    "trial_dict",
    "trial_loaded",
    "trial_name",
    "trial_results",
    "unrun_reason",
]

LEADERBOARD_ROWS = 50
UUID_CHARS = 8
"""How much of a trial's uuid the leaderboard shows: enough to find it, narrow enough to read."""


def jsonable(value: object) -> Any:
    """``value`` as plain JSON data (what a flow run parameter, a plan or ``--json`` can hold):
    dates as ISO strings, durations as seconds, containers recursively, anything else JSON
    cannot hold as its text."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def finite(value: object) -> float | None:
    """A finite number as a float, else None (a bool, a string, NaN or inf)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def study_prefix(
    operation: Operation, op_name: str, params: Mapping[str, Any], overrides: Mapping[str, Any]
) -> str:
    """``<op>-<hash>``: the same op with the same params always gets the same prefix, so
    ``--resume`` finds the sweep it continues (the newest study with that prefix)."""
    blob = json.dumps(
        {
            "op": operation.model_dump(mode="json", by_alias=True, exclude_none=True),
            "params": jsonable(dict(params)),
            "overrides": jsonable(dict(overrides)),
        },
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:10]
    return f"{slug(op_name)}-{digest}"


def _format_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def trial_name(index: int, params: Mapping[str, Any]) -> str:
    """``trial-7 lr=0.01 dropout=0.25`` (values shortened, the whole name kept readable)."""
    shown = " ".join(f"{k}={_format_value(v)}" for k, v in params.items())
    name = f"trial-{index} {shown}".strip()
    return name if len(name) <= 120 else name[:117] + "..."


def trial_loaded(loaded: Any, params: Mapping[str, Any]) -> Any:
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


def gpu_budget_spent(matrix: object, spent: float) -> str | None:
    """Why the sweep stops for its GPU budget (``maxGpuHours``, our extension beside
    ``earlyStopping``), or None: its ended trials held GPUs for ``spent`` GPU-hours, at or past
    the budget. The sweep then ends as when a metric reached its target (``succeeded``, the
    trials in flight ``stopped``): the budget is the user's plan, not a failure."""
    budget = getattr(matrix, "max_gpu_hours", None)
    if budget is None or spent < float(budget):
        return None
    return (
        f"GPU budget spent: the trials held GPUs for {spent:.3g} GPU-hours, maxGpuHours is {budget}"
    )


def trial_dict(record: Any) -> dict[str, Any]:
    """A study's trial record as ``--json`` and the DAG's ops table show it."""
    return {
        "index": record.index,
        "number": record.number,
        "params": jsonable(record.params),
        "status": record.status,
        "outputs": jsonable(record.outputs),
        "metrics": jsonable(record.metrics),
        "uuid": record.uuid,
        "value": record.value,
        "message": record.message,
    } | _gpu_hours(record)


def _gpu_hours(record: object) -> dict[str, Any]:
    """``{"gpu_hours": h}`` for a trial that held GPUs, else nothing (records of other kinds of
    run, and of older sweeps, have none)."""
    hours = getattr(record, "gpu_hours", None)
    return {"gpu_hours": hours} if hours is not None else {}


def _cell(value: object) -> Any:
    value = display(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, default=str)


def leaderboard_rows(
    history: Sequence[Any], metric: str | None, maximize: bool
) -> list[dict[str, Any]]:
    """The trials best first by ``metric`` (those without a value last, by index): rank,
    status, the metric, the params, then the trial's other outputs and last metrics
    (`trial_results`), then the start of its uuid.
    Floats are rounded for display (`display`); ranking uses the exact values."""
    sign = -1.0 if maximize else 1.0

    def rank(record: Any) -> tuple[int, float, int]:
        value = finite(record.value)
        if value is None:
            return (1, 0.0, record.index)
        return (0, sign * value, record.index)

    rows = []
    for position, record in enumerate(sorted(history, key=rank)[:LEADERBOARD_ROWS], 1):
        row: dict[str, Any] = {"rank": position, "trial": record.index}
        row["status"] = record.status
        if metric:
            row[metric] = display(record.value)
        for key, value in record.params.items():
            row[key] = _cell(value)
        outputs, metrics = getattr(record, "outputs", None), getattr(record, "metrics", None)
        results = trial_results(outputs, metrics, metric)
        for key, value in results.items():
            if key not in row:  # the trial's outputs and last metrics, after its params
                row[key] = _cell(value)
        hours = getattr(record, "gpu_hours", None)
        if hours is not None:
            row["gpu_hours"] = display(hours)
        row["uuid"] = record.uuid[:UUID_CHARS] if record.uuid else record.uuid
        rows.append(row)
    return rows


def _masked(value: object, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask(str(k)): _masked(v, mask) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, mask) for v in value]
    return value


def data_section(data: object, mask: Callable[[str], str] = str) -> list[str]:
    """A report's data as a fenced JSON block under `DATA_HEADING` (Markdown lines).

    ``get`` reads a finished DAG or sweep from it: what the flow knew when it ended, written
    before the flow run's final state, where the task runs' states lag (the server records
    them from events, asynchronously). Strings are masked one by one, so the JSON stays valid;
    JSON strings hold no raw newline, so the closing fence cannot occur inside the block."""
    text = json.dumps(_masked(data, mask), indent=2, default=str)
    return [DATA_HEADING, "", _FENCE + "json", text, _FENCE]


def best_markdown(
    op_name: str,
    best: Mapping[str, Any] | None,
    metric: str | None,
    trials: Sequence[Mapping[str, Any]] | None = None,
    ranked_by: str = "last",
) -> str:
    """The best trial and its params, as Markdown; with ``trials`` (`trial_dict`, masked), a
    last section has the metric (and ``ranked_by``: which of its values ranks the trials,
    ``last`` or ``best over steps``), the trials and the best as JSON: what ``get`` reads back
    (the leaderboard is a view: at most `LEADERBOARD_ROWS`, values shown as cells)."""
    lines = [f"# Sweep `{op_name}`", ""]
    if best is not None:
        lines += [
            f"Best trial: **{best['index']}** ({best['status']})"
            + (f", {metric} = {_cell(best['value'])} ({ranked_by} value)" if metric else ""),
            "",
            "| param | value |",
            "|---|---|",
            *(f"| {k} | {_cell(v)} |" for k, v in best["params"].items()),
        ]
    else:
        lines.append("No best trial (no succeeded trial with a metric value).")
    if trials is not None:
        data = {"metric": metric, "ranked_by": ranked_by if metric else None, "best": best}
        lines += ["", *data_section({**data, "trials": list(trials)})]
    return "\n".join(lines)


class SweepRun:
    """What a sweep knows beyond its study: the trials finished in this run (for early
    stopping), and the decision that stops it."""

    def __init__(self, policies: Sequence[Any]) -> None:
        self.policies = list(policies)
        self.finished: list[RunSummary] = []
        self.decision: StopDecision | None = None

    def resumed(self, done: Sequence[Any]) -> None:
        """Count the trials an earlier run of the sweep finished."""
        self.finished = [RunSummary(r.status, {**r.metrics, **r.outputs}) for r in done]

    @staticmethod
    def trial_status(status: str, cancelled: bool) -> Status:
        """The status a finished trial is told as: a cancelled trial (pruned, early stopping,
        a stop) that failed on its way out is ``stopped``; anything not final is ``failed``."""
        if cancelled and status in (Status.FAILED, Status.STOPPED):
            return Status.STOPPED
        if status not in DONE_STATUSES:
            return Status.FAILED
        return Status(status)

    def trial_finished(
        self, status: str, metrics: Mapping[str, Any], total: int | None
    ) -> StopDecision | None:
        """Record a finished trial; returns a new early-stopping decision, if one is made."""
        self.finished.append(RunSummary(status, dict(metrics)))
        if self.decision is not None:
            return None
        decision = check_early_stopping(self.policies, self.finished, total)
        if decision is not None:
            self.decision = decision
        return decision

    def stop(self, reason: str, status: Status) -> StopDecision | None:
        """Stop the sweep (once): returns the decision when this call made it."""
        if self.decision is not None:
            return None
        self.decision = StopDecision(reason=reason, status=status)
        return self.decision

    def outcome(
        self,
        history: Sequence[Any],
        study_stop_reason: str | None,
        best_index: int | None,
        unrun: tuple[int, int | None] = (0, None),
    ) -> tuple[Status, str, str]:
        """``(status, reason, message)`` of the finished sweep (module docstring of the Prefect
        layer's sweep: a decision's status, else ``stopped`` while points are not run, else
        ``failed`` when a trial failed). ``unrun``: how many points have not run to their end,
        and the sweep's total (None: open-ended)."""
        counts: dict[str, int] = {}
        for record in history:
            counts[record.status] = counts.get(record.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no trials"
        reason = ""
        if self.decision is not None:
            status, reason = self.decision.status, self.decision.reason
            if status == Status.STOPPED and unrun[0]:  # stopped, not decided: say what is left
                reason += f"; {unrun_reason(*unrun)}"
        elif study_stop_reason:
            status, reason = Status.SUCCEEDED, str(study_stop_reason)
        elif unrun[0]:  # a sweep with points never run has not succeeded (nor failed yet)
            status, reason = Status.STOPPED, unrun_reason(*unrun)
        elif counts.get(Status.FAILED):
            status = Status.FAILED
        else:
            status = Status.SUCCEEDED
        message = f"{len(history)} trials: {summary}" + (f"; {reason}" if reason else "")
        if best_index is not None:
            message += f"; best trial {best_index}"
        return status, reason, message


def unrun_reason(unrun: int, total: int | None) -> str:
    """``2 of 6 points not run; run again with --resume`` (what a stopped sweep tells)."""
    of = f" of {total}" if total is not None else ""
    return f"{unrun}{of} point{'s' if unrun != 1 or total else ''} not run; run again with --resume"
