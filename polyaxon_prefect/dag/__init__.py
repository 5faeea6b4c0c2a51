"""Pure DAG logic: upstream inference, ordering and validation (no Prefect)."""

from polyaxon_prefect.dag._graph import find_cycle, op_upstreams, ref_op_name, topological_stages
from polyaxon_prefect.dag._validate import dag_context, validate_dag

__all__ = [
    "dag_context",
    "find_cycle",
    "op_upstreams",
    "ref_op_name",
    "topological_stages",
    "validate_dag",
]
