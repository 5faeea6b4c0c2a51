"""How far a sweep or a job is (`search._progress`): counts, best so far, ETA, the words."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from polyaxon_prefect.search._progress import (
    JobProgress,
    SweepProgress,
    SweepTracker,
    best_over_steps,
    format_eta,
    job_eta,
    metric_values,
    objective_value,
    sweep_eta,
    trial_line,
)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "?"), (0.4, "0s"), (45, "45s"), (80, "1m20s"), (3600 * 2 + 300, "2h05m")],
)
def test_format_eta(seconds: float | None, shown: str) -> None:
    assert format_eta(seconds) == shown


def test_sweep_eta_from_durations_running_time_and_concurrency() -> None:
    assert sweep_eta([], 5, [], 2) is None  # no trial finished: nothing to go on
    assert sweep_eta([10.0], 0, [], 2) == 0.0
    # 4 left (2 of them running for 4 s each), 10 s a trial, 2 at a time: (40 - 8) / 2
    assert sweep_eta([8.0, 12.0], 4, [4.0, 4.0], 2) == pytest.approx(16.0)
    # a running trial past the mean counts as a mean's work done, not more
    assert sweep_eta([10.0], 1, [30.0], 4) == 0.0
    # more slots than trials left: the trials left bound the parallelism
    assert sweep_eta([10.0], 2, [], 8) == pytest.approx(10.0)


def test_job_eta_at_the_rate_so_far() -> None:
    assert job_eta(None, 10) is None and job_eta(0.0, 10) is None
    assert job_eta(0.25, 30) == pytest.approx(90.0)
    assert job_eta(1.0, 30) == 0.0


def test_best_over_steps_and_the_objective_value() -> None:
    history = [0.9, float("nan"), 0.2, 0.4, "inf"]
    assert best_over_steps(history, maximize=False) == 0.2
    assert best_over_steps(history, maximize=True) == 0.9
    assert best_over_steps([], maximize=True) is None
    records = [{"step": 0, "loss": 0.5}, {"step": 1, "acc": 1}, {"step": 2, "loss": 0.3}]
    assert metric_values(records, "loss") == [0.5, 0.3]
    last = objective_value(
        "loss", {}, {"loss": 0.4}, [0.5, 0.2, 0.4], over_steps=None, maximize=False
    )
    assert last == 0.4  # Polyaxon's rule: the last value
    best = objective_value(
        "loss", {}, {"loss": 0.4}, [0.5, 0.2, 0.4], over_steps="best", maximize=False
    )
    assert best == 0.2
    # an output counts as one more value; no history: the output itself
    assert (
        objective_value("loss", {"loss": 0.1}, {}, [0.5], over_steps="best", maximize=False) == 0.1
    )
    assert objective_value("loss", {"loss": 0.7}, {}, [], over_steps="best", maximize=False) == 0.7
    assert objective_value(None, {"loss": 0.7}, {}, [], over_steps="best", maximize=False) is None


def _record(index: int, status: str, value: float | None) -> SimpleNamespace:
    return SimpleNamespace(index=index, status=status, value=value, params={"x": index})


def test_tracker_best_failed_and_the_progress_dict() -> None:
    tracker = SweepTracker("loss", maximize=False, over_steps=None, concurrency=2)
    tracker.resumed([_record(0, "succeeded", 0.5), _record(1, "failed", None)])
    tracker.finished(2, "succeeded", 0.3, {"x": 2}, 10.0)
    tracker.finished(3, "stopped", 0.1, {"x": 3}, 10.0)  # not succeeded: not the best
    progress = tracker.progress(4, 6, [5.0])
    assert progress.to_dict() == {
        "done": 4,
        "total": 6,
        "running": 1,
        "failed": 1,
        "fraction": 0.6667,
        "eta_seconds": 7.5,  # (2 left x 10 s - 5 s done) / 2 slots
        "best": {
            "metric": "loss",
            "value": 0.3,
            "trial": 2,
            "params": {"x": 2},
            "ranked_by": "last",
        },
    }
    assert progress.description() == (
        "4 of 6 trials done, 1 running, 1 failed; best loss 0.3 (trial 2), last value; ETA 8s"
    )
    line = trial_line(3, "stopped", 0.1, progress)
    assert line == "trial 3 stopped (4/6) loss=0.1 (best 0.3, trial 2) eta 8s"


def test_open_ended_sweep_and_the_last_line() -> None:
    open_ended = SweepProgress(done=3, total=None, running=1)
    assert open_ended.to_dict() == {"done": 3, "running": 1, "failed": 0}
    assert open_ended.count() == "3/?" and open_ended.fraction is None
    over = SweepProgress(done=2, total=2, metric="acc", eta_seconds=0.0, over_steps="best")
    assert trial_line(1, "succeeded", 0.9, over) == "trial 1 succeeded (2/2) acc=0.9"
    assert over.description() == "2 of 2 trials done"


def test_job_progress_words() -> None:
    assert JobProgress(0.25, 90.0).description() == "25% done; ETA 1m30s"
    assert JobProgress(0.25, 90.0).to_dict() == {"fraction": 0.25, "eta_seconds": 90.0}
    assert JobProgress(1.0, 0.0).description() == "100% done"


def test_log_progress_writes_what_the_run_reads(tmp_path: Path) -> None:
    from polyaxon_prefect import tracking

    tracking.init(outputs_path=str(tmp_path))
    try:
        path = tmp_path / tracking.PROGRESS_FILE
        assert tracking.read_progress_file(path) is None  # never called: nothing to show
        tracking.log_progress(0.4)
        fraction, stamp = tracking.read_progress_file(path) or (None, "")
        assert fraction == 0.4 and stamp
        with pytest.raises(ValueError, match="from 0 to 1"):
            tracking.log_progress(40)  # a percentage, not a fraction
        with pytest.raises(TypeError):
            tracking.log_progress("half")  # type: ignore[arg-type]
        path.write_text('{"progress": 7}')  # a file that does not hold a fraction
        assert tracking.read_progress_file(path) is None
    finally:
        tracking._state["outputs"] = None


def test_the_progress_line_get_prints() -> None:
    from polyaxon_prefect.search import progress_words

    sweep = SweepTracker("loss", maximize=False, over_steps="best", concurrency=2)
    sweep.finished(4, "succeeded", 0.29, {"x": 4}, 20.0)
    shown = sweep.progress(7, 20, [10.0, 10.0]).to_dict()  # (13 x 20 s - 2 x 10 s) / 2
    assert progress_words(shown) == (
        "7/20 done, 2 running; best loss 0.29 (trial 4, best over steps); eta 2m00s"
    )
    assert progress_words({"done": 3, "running": 0, "failed": 1}) == "3/? done, 1 failed"
    assert progress_words(JobProgress(0.45, 190.0).to_dict()) == "45%; eta 3m10s"
