"""What kind of runner an operation needs: one job, a DAG scheduler, or a sweep.

Pure (no Prefect), so the CLI can tell before it imports Prefect.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["OpKind", "op_kind"]

OpKind = Literal["job", "dag", "matrix"]


def op_kind(operation: Any) -> OpKind:
    """``matrix`` for an op with a matrix, ``dag`` for a DAG component, else ``job``.

    ``matrix`` wins over ``dag``: an op with a matrix whose component is a DAG is a sweep of
    DAGs. Other run kinds (services, distributed jobs) count as ``job`` here: `prepare_job`
    refuses them with a located problem that says why.
    """
    if getattr(operation, "matrix", None) is not None:
        return "matrix"
    run = getattr(getattr(operation, "component", None), "run", None)
    if getattr(run, "kind", None) == "dag":
        return "dag"
    return "job"
