"""Pure DAG logic: upstream inference, ordering, validation, trigger rules, refs, conditions and
joins (no Prefect).

The graph and validation helpers are pure spec checks that loading runs too, so they live in
`polyaxon_prefect.specs` and are re-exported here; the scheduling helpers are loaded on first
use, so loading a file does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyaxon_prefect._lazy import lazy_attributes
from polyaxon_prefect.specs import (
    dag_context,
    find_cycle,
    op_upstreams,
    ref_op_name,
    topological_stages,
    validate_dag,
)

if TYPE_CHECKING:
    from polyaxon_prefect.dag._conditions import ConditionError, evaluate_conditions
    from polyaxon_prefect.dag._join_query import resolve_joins
    from polyaxon_prefect.dag._plan import (
        MAX_DAG_DEPTH,
        DagPlan,
        child_loaded,
        inline_component,
        plan_dag,
        push_down,
    )
    from polyaxon_prefect.dag._records import OpRecord
    from polyaxon_prefect.dag._resolve import DagScope, resolve_params
    from polyaxon_prefect.dag._reuse import (
        DagReuse,
        downstream_of,
        restart_point,
        reused_ops,
        uncached_ops,
    )
    from polyaxon_prefect.dag._trigger_rules import (
        DONE_STATUSES,
        FAILED_STATUSES,
        TRIGGERS,
        Decision,
        decide,
        truth_table_markdown,
    )

_LAZY = {
    "ConditionError": "_conditions",
    "evaluate_conditions": "_conditions",
    "resolve_joins": "_join_query",
    "MAX_DAG_DEPTH": "_plan",
    "DagPlan": "_plan",
    "child_loaded": "_plan",
    "inline_component": "_plan",
    "plan_dag": "_plan",
    "push_down": "_plan",
    "OpRecord": "_records",
    "DagScope": "_resolve",
    "resolve_params": "_resolve",
    "DagReuse": "_reuse",
    "downstream_of": "_reuse",
    "restart_point": "_reuse",
    "reused_ops": "_reuse",
    "uncached_ops": "_reuse",
    "DONE_STATUSES": "_trigger_rules",
    "FAILED_STATUSES": "_trigger_rules",
    "TRIGGERS": "_trigger_rules",
    "Decision": "_trigger_rules",
    "decide": "_trigger_rules",
    "truth_table_markdown": "_trigger_rules",
}

__all__ = [
    "DONE_STATUSES",
    "FAILED_STATUSES",
    "MAX_DAG_DEPTH",
    "TRIGGERS",
    "ConditionError",
    "DagPlan",
    "DagReuse",
    "DagScope",
    "Decision",
    "OpRecord",
    "child_loaded",
    "dag_context",
    "decide",
    "downstream_of",
    "evaluate_conditions",
    "find_cycle",
    "inline_component",
    "op_upstreams",
    "plan_dag",
    "push_down",
    "ref_op_name",
    "resolve_joins",
    "resolve_params",
    "restart_point",
    "reused_ops",
    "topological_stages",
    "truth_table_markdown",
    "uncached_ops",
    "validate_dag",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
