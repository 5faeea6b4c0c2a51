"""What a finished DAG run reports: its status, its outputs, its ops table and its Markdown.

Pure functions of the plan and the ops' records, so the Prefect layer only shows them (a flow
run's message, a Markdown artifact) and the CLI's ``--json`` prints the same ``ops`` table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from polyaxon_prefect.dag._plan import DagPlan
from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.search._sweep import data_section
from polyaxon_prefect.specs import Status, op_kind

__all__ = ["dag_final_status", "dag_markdown", "dag_outputs", "dag_summary", "ops_table"]


def dag_final_status(statuses: Mapping[str, str]) -> Status:
    """Polyaxon's pipeline status from its ops' final statuses.

    ``failed`` if any op failed (``upstream_failed`` alone does not fail the DAG: an
    ``all_failed`` clean-up op over successful ops is a branch not taken), ``stopped`` if every
    op was stopped, else ``succeeded``.
    """
    values = list(statuses.values())
    if any(s == Status.FAILED for s in values):
        return Status.FAILED
    if values and all(s == Status.STOPPED for s in values):
        return Status.STOPPED
    return Status.SUCCEEDED


def dag_outputs(operation: Any, plan: DagPlan, records: Mapping[str, OpRecord]) -> dict[str, Any]:
    """The DAG component's declared outputs: a param of the DAG op that refs an op's output
    (``ref: ops.X, value: outputs.Y``), else the value of the same name from the last op (in
    topological order) that succeeded with it."""
    outputs: dict[str, Any] = {}
    params = operation.params or {}
    for io in operation.component.outputs or []:
        param = params.get(io.name)
        ref = getattr(param, "ref", None)
        if isinstance(ref, str) and ref.startswith("ops."):
            record = records.get(ref[4:])
            value = getattr(param, "value", None)
            if record is not None and isinstance(value, str) and value.startswith("outputs."):
                key = value[len("outputs.") :]
                if key in record.outputs:
                    outputs[io.name] = record.outputs[key]
            continue
        for name in reversed(plan.order):
            found = records.get(name)
            if found and found.status == Status.SUCCEEDED and io.name in found.outputs:
                outputs[io.name] = found.outputs[io.name]
                break
    return outputs


def ops_table(
    plan: DagPlan,
    records: Mapping[str, OpRecord],
    details: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """``{op: {"status", "outputs", "uuid", "message", (a nested DAG's "ops", a sweep's
    "trials"/"best", an op that held GPUs its "gpu_hours")}}`` in topological order."""
    ops: dict[str, dict[str, Any]] = {}
    for name in plan.order:
        record = records.get(name)
        entry: dict[str, Any] = {
            "status": record.status if record else None,
            "outputs": dict(record.outputs) if record else {},
            "uuid": record.uuid if record else None,
            "message": record.message if record else "",
        }
        entry.update(details.get(name, {}))
        ops[name] = entry
    return ops


def dag_gpu_hours(ops: Mapping[str, Mapping[str, Any]]) -> float | None:
    """A DAG's GPU-hours: the sum of its ops' (a nested DAG's and a sweep's already their own
    ops' and trials' sums); None when no op held a GPU."""
    hours = [e["gpu_hours"] for e in ops.values() if isinstance(e.get("gpu_hours"), int | float)]
    return sum(hours) if hours else None


def dag_summary(name: str, status: str, statuses: Mapping[str, str], reason: str = "") -> str:
    """``dag `x` failed: 2 succeeded, 1 failed; failed: b; <reason>``."""
    counts: dict[str, int] = {}
    for value in statuses.values():
        counts[value] = counts.get(value, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    failed = [n for n, s in statuses.items() if s == Status.FAILED]
    message = f"dag `{name}` {status}: {summary}"
    if failed:
        message += "; failed: " + ", ".join(failed)
    if reason:
        message += f"; {reason}"
    return message


def _cell(text: object, mask: Callable[[str], str]) -> str:
    return mask(str(text)).replace("|", "\\|").replace("\n", " ")[:200]


def dag_markdown(
    name: str,
    status: str,
    plan: DagPlan,
    ops: Mapping[str, Mapping[str, Any]],
    reason: str = "",
    *,
    mask: Callable[[str], str] = str,
    outputs: Mapping[str, Any] | None = None,
) -> str:
    """The DAG as Markdown: ops with trigger, upstreams and final status, the edges, then its
    status, ``outputs`` and ``ops`` (`ops_table`) as JSON, what ``get`` reads back.

    ``mask`` hides secrets in messages before they are cut to a cell's length (so a secret is
    never shown in part), and in every string of the JSON."""
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
            f"**{entry.get('status')}** | {_cell(entry.get('message') or '', mask)} |"
        )
    edges = [(u, d) for d in plan.order for u in plan.upstreams.get(d, ())]
    lines += ["", "## Edges", ""]
    lines += [f"- `{u}` -> `{d}`" for u, d in edges] or ["(none)"]
    data = {"status": status, "outputs": dict(outputs or {}), "ops": ops}
    lines += ["", *data_section(data, mask)]
    return "\n".join(lines) + "\n"
