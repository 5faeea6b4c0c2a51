"""When is a distributed run over, and how did it end? The operators' rules, as one function.

`decide` is asked every time a replica ends (shaped like the DAG's `dag._trigger_rules.decide`): the
runner stops the other replicas as soon as the answer is not ``running``. The rules are the
training operator's, without its restarts (a local replica is never restarted):

* a failed replica fails the job at once (fail fast: a rank that is gone hangs the collectives
  of the others);
* the main replica decides when the run has the kind's leader (TF chief, PyTorch/XGBoost/Paddle
  master, MPI launcher, MXNet scheduler): the job succeeds when it does, whatever the ps or
  evaluators are still doing;
* without a leader, a TFJob succeeds with worker 0 (unless ``successPolicy: AllWorkers``), the
  other kinds when every worker has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from polyaxon_prefect.distributed._topology import Replica, ReplicaPlan
from polyaxon_prefect.specs import FAILED_STATUSES, MAIN_REPLICAS, Status, TFJob

__all__ = ["WORKER_ZERO_DECIDES", "Decision", "decide", "deciders"]

State = Literal["running", "succeeded", "failed"]

WORKER_ZERO_DECIDES = frozenset({"tfjob"})
"""Kinds whose worker 0 decides when the run has no leader (TF's default success policy)."""

_ALL_WORKERS = "AllWorkers"


@dataclass(frozen=True)
class Decision:
    """``running``, or how the job ended; ``replica`` names the one that failed it."""

    state: State
    replica: str | None = None


def deciders(plan: ReplicaPlan) -> tuple[Replica, ...]:
    """The replicas whose success is the job's."""
    if plan.main.type == MAIN_REPLICAS.get(plan.kind):
        return (plan.main,)
    policy = plan.run.success_policy if isinstance(plan.run, TFJob) else None
    if plan.kind in WORKER_ZERO_DECIDES and policy != _ALL_WORKERS:
        return (plan.main,)
    return plan.of_type("worker") or plan.replicas


def decide(plan: ReplicaPlan, statuses: Mapping[str, str | None]) -> Decision:
    """How the job stands given each replica's status so far (by replica name; a replica not
    in ``statuses``, ``None`` or ``running`` has not ended).

    A ``stopped`` replica counts as failed: nobody but the runner stops a replica, and it only
    does once the job is decided.
    """
    for replica in plan.replicas:
        status = statuses.get(replica.name)
        if status in FAILED_STATUSES or status == Status.STOPPED:
            return Decision("failed", replica.name)
    if all(statuses.get(r.name) == Status.SUCCEEDED for r in deciders(plan)):
        return Decision("succeeded")
    return Decision("running")
