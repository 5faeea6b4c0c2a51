"""The operators' success rules as a truth table."""

from __future__ import annotations

import pytest

from polyaxon_prefect.distributed import Decision, decide, plan_replicas
from polyaxon_prefect.specs import MPIJob, PytorchJob, TFJob

C = {"container": {"command": ["x"]}}
R, S, F, X = None, "succeeded", "failed", "stopped"


def _group(n: int) -> dict:
    return {"replicas": n, **C}


TF_CHIEF = TFJob.model_validate({"chief": _group(1), "ps": _group(1), "worker": _group(2)})
TF_WORKERS = TFJob.model_validate({"ps": _group(1), "worker": _group(2)})
TF_ALL = TFJob.model_validate({"successPolicy": "AllWorkers", "worker": _group(2)})
TORCH = PytorchJob.model_validate({"master": _group(1), "worker": _group(2)})
TORCH_WORKERS = PytorchJob.model_validate({"worker": _group(2)})
MPI = MPIJob.model_validate({"launcher": _group(1), "worker": _group(2)})


@pytest.mark.parametrize(
    ("run", "statuses", "expected"),
    [
        # the chief decides; ps never end by themselves
        (TF_CHIEF, {}, Decision("running")),
        (TF_CHIEF, {"worker-0": S, "worker-1": S}, Decision("running")),
        (TF_CHIEF, {"chief-0": S}, Decision("succeeded")),
        (TF_CHIEF, {"chief-0": S, "worker-1": R}, Decision("succeeded")),
        (TF_CHIEF, {"worker-1": F}, Decision("failed", "worker-1")),
        (TF_CHIEF, {"ps-0": F, "chief-0": R}, Decision("failed", "ps-0")),
        # without a chief, worker 0 decides (the default policy)...
        (TF_WORKERS, {"worker-0": S}, Decision("succeeded")),
        (TF_WORKERS, {"worker-1": S}, Decision("running")),
        # ...or every worker (AllWorkers)
        (TF_ALL, {"worker-0": S}, Decision("running")),
        (TF_ALL, {"worker-0": S, "worker-1": S}, Decision("succeeded")),
        # PyTorch: the master decides, else all workers
        (TORCH, {"master-0": S}, Decision("succeeded")),
        (TORCH, {"worker-0": S, "worker-1": S}, Decision("running")),
        (TORCH, {"master-0": R, "worker-0": F}, Decision("failed", "worker-0")),
        (TORCH, {"master-0": X}, Decision("failed", "master-0")),
        (TORCH_WORKERS, {"worker-0": S}, Decision("running")),
        (TORCH_WORKERS, {"worker-0": S, "worker-1": S}, Decision("succeeded")),
        # MPI: the launcher decides
        (MPI, {"launcher-0": S}, Decision("succeeded")),
        (MPI, {"launcher-0": F}, Decision("failed", "launcher-0")),
    ],
)
def test_truth_table(run, statuses: dict, expected: Decision) -> None:
    assert decide(plan_replicas(run), statuses) == expected


def test_the_first_failed_replica_by_rank_is_named() -> None:
    decision = decide(plan_replicas(TORCH), {"worker-1": F, "worker-0": F})
    assert decision == Decision("failed", "worker-0")
