"""Which ops of a restarted DAG reuse an earlier run's results (``restart --from OP``), and
which run anyway (``restart --force OP``).

Running again from a failed op means: the ops that are not downstream of it and succeeded last
time are not run again; their recorded outputs feed the rest, exactly as if they had just
ended. ``OP`` and everything downstream of it run. A forced op runs too, never from the op
cache, and nothing downstream of it is reused (those ops go through the cache: its new outputs
are their new inputs). A reused job op whose code changed since runs again (the DAG runner
compares the record's code hash, `OpRecord.code`, with the op's). Pure: the plan's edges and the
earlier records in, the reused records out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from polyaxon_prefect.dag._records import OpRecord
from polyaxon_prefect.specs import Status

__all__ = ["DagReuse", "downstream_of", "restart_point", "reused_ops", "uncached_ops"]

RESTART_STATUSES = (Status.FAILED, Status.STOPPED, Status.UPSTREAM_FAILED)
"""How an op that a restart runs from by default ended (the first of them in DAG order)."""


@dataclass(frozen=True)
class DagReuse:
    """A DAG restarted from ``from_op`` (None: no op failed, the DAG runs again whole, through
    the op cache): the earlier run's ``records`` (op -> how it ended); ``force``: ops that run
    again whatever the cache or the records hold."""

    from_op: str | None
    records: Mapping[str, OpRecord] = field(default_factory=dict)
    force: frozenset[str] = frozenset()


def downstream_of(op: str, downstreams: Mapping[str, Iterable[str]]) -> set[str]:
    """``op`` and every op that depends on it, directly or not."""
    seen = {op}
    todo = [op]
    while todo:
        for child in downstreams.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def reused_ops(
    reuse: DagReuse, ops: Iterable[str], downstreams: Mapping[str, Iterable[str]]
) -> dict[str, OpRecord]:
    """The records of the ops a restart from ``reuse.from_op`` does not run again: those of
    the DAG's ``ops`` that succeeded last time and are not ``from_op``, a forced op, nor
    downstream of one. None without ``from_op``: the whole DAG runs, through the cache."""
    if reuse.from_op is None:
        return {}
    rerun = downstream_of(reuse.from_op, downstreams)
    for op in reuse.force:
        rerun |= downstream_of(op, downstreams)
    return {
        name: record
        for name in ops
        if name not in rerun
        and (record := reuse.records.get(name)) is not None
        and record.status == Status.SUCCEEDED
    }


def uncached_ops(reuse: DagReuse, downstreams: Mapping[str, Iterable[str]]) -> set[str]:
    """The ops a restart runs without reading the op cache: ``from_op`` and everything
    downstream of it (they run again, as asked), and the forced ops."""
    rerun = downstream_of(reuse.from_op, downstreams) if reuse.from_op is not None else set()
    return rerun | set(reuse.force)


def restart_point(order: Iterable[str], statuses: Mapping[str, str]) -> str | None:
    """The op a restart runs from by default: the first in DAG ``order`` that failed or was
    stopped (None when none did: the DAG runs again whole)."""
    return next((name for name in order if statuses.get(name) in RESTART_STATUSES), None)
