"""The quick-start sweeps of `examples/quick-start/` run end to end on the quick-start component.

Each is a real sweep (an Optuna study in a journal file, a child flow run per trial, the numpy
model trained in a process per trial) under the session's Prefect test server. The hyperband
file (206 trials, about 40 s) is left to `make example`-style manual runs; its schedule is
asserted by `tests/test_compile_plans.py` and hyperband sweeps by `test_sweep.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import polyaxon_prefect

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "quick-start"


@pytest.mark.parametrize(
    ("file", "trials", "has_best"),
    [
        ("hyperparams_grid.yaml", 40, False),
        ("hyperparams_random.yaml", 20, False),
        ("hyperparams_bayes.yaml", 20, True),
        ("hyperparams_hyperopt.yaml", 20, True),
        ("mapping.yaml", 2, False),
    ],
)
def test_quick_start_sweep_runs(file: str, trials: int, has_best: bool) -> None:
    result = polyaxon_prefect.run(EXAMPLES / file)

    assert result.status == "succeeded", result.message
    assert result.trials is not None and len(result.trials) == trials
    assert all(t["status"] == "succeeded" and t["outputs"]["loss"] >= 0 for t in result.trials)
    assert sorted(t["index"] for t in result.trials) == list(range(trials))
    if has_best:  # the matrix names a metric (loss, minimised): the best is the lowest loss
        losses = [t["outputs"]["loss"] for t in result.trials]
        assert result.best is not None and result.best["value"] == pytest.approx(min(losses))


def test_distributed_example_all_reduces_across_three_local_replicas() -> None:
    """`examples/distributed/pytorchjob.yaml`: a master and two workers, one process each."""
    pytest.importorskip("torch")
    example = EXAMPLES.parent / "distributed" / "pytorchjob.yaml"

    result = polyaxon_prefect.run(example)

    assert result.status == "succeeded", result.message
    assert result.outputs == {"total": 6.0, "world_size": 3}  # 1 + 2 + 3, the master's
    logs = Path(result.artifacts_path or "", "logs")
    assert sorted(p.name for p in logs.glob("*.log")) == [
        "master-0.log",
        "worker-0.log",
        "worker-1.log",
    ]
