from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.search import grid_suggestions
from polyaxon_prefect.search._study import SweepStudy, SweepStudyError

from ._matrices import matrix

GRID = {
    "kind": "grid",
    "params": {
        "lr": {"kind": "linspace", "value": "0.001:0.1:5"},
        "act": {"kind": "choice", "value": ["relu", "sigmoid"]},
        "epochs": {"kind": "range", "value": [1, 4, 1]},
    },
    "earlyStopping": [
        {
            "kind": "metric_early_stopping",
            "metric": "loss",
            "value": 0.0,
            "optimization": "minimize",
        }
    ],
}


def _drain(study: SweepStudy, value=lambda s: 0.0) -> list:
    asked = []
    while (suggestion := study.ask()) is not None:
        asked.append(suggestion)
        study.tell(suggestion.number, status="succeeded", value=value(suggestion))
    return asked


def test_grid_runs_every_point_in_polyaxon_order() -> None:
    grid = matrix(GRID)
    study = SweepStudy.open(grid, study_name="grid-order", storage=":memory:")
    asked = _drain(study)
    assert study.total == 30
    assert [s.params for s in asked] == grid_suggestions(grid)
    assert [s.index for s in asked] == list(range(30))
    assert study.is_finished()


def test_mapping_and_random_order_and_reproducibility() -> None:
    mapping = matrix({"kind": "mapping", "values": [{"a": 1}, {"a": 3}, {"a": 2}]})
    study = SweepStudy.open(mapping, study_name="map", storage=":memory:")
    assert [s.params["a"] for s in _drain(study)] == [1, 3, 2]
    data = {
        "kind": "random",
        "numRuns": 6,
        "seed": 11,
        "params": {
            "x": {"kind": "uniform", "value": [0, 1]},
            "c": {"kind": "choice", "value": [1, 2]},
        },
    }
    first = _drain(SweepStudy.open(matrix(data), study_name="r1", storage=":memory:"))
    again = _drain(SweepStudy.open(matrix(data), study_name="r2", storage=":memory:"))
    assert len(first) == 6
    assert [s.params for s in first] == [s.params for s in again]


def test_best_uses_metric_direction_and_values_from_outputs() -> None:
    study = SweepStudy.open(matrix(GRID), study_name="best", storage=":memory:")
    for _ in range(4):
        s = study.ask()
        study.tell(s.number, status="succeeded", outputs={"loss": 10 - s.index})
    s = study.ask()
    study.tell(s.number, status="failed", outputs={"loss": -100})
    best = study.best()
    assert best is not None and best.index == 3 and best.value == 7
    assert study.history()[4].status == "failed"


@pytest.mark.parametrize("file", ["s.journal", "s.db"])
def test_create_twice_and_resume_missing_are_errors(tmp_path: Path, file: str) -> None:
    url = str(tmp_path / file)
    SweepStudy.open(matrix(GRID), study_name="dup", storage=url)
    with pytest.raises(SweepStudyError, match="already exists"):
        SweepStudy.open(matrix(GRID), study_name="dup", storage=url)
    with pytest.raises(SweepStudyError, match="no sweep study named 'nope'"):
        SweepStudy.open(matrix(GRID), study_name="nope", storage=url, resume=True)
    assert SweepStudy.latest(url, "du") == "dup"
    assert SweepStudy.latest(url, "x") is None


@pytest.mark.parametrize("file", ["sweeps.journal", "sweeps.db"])
def test_resume_after_crash_reruns_running_not_completed(tmp_path: Path, file: str) -> None:
    url = str(tmp_path / file)
    study = SweepStudy.open(matrix(GRID), study_name="crash", storage=url)
    done = [study.ask() for _ in range(3)]
    for s in done:
        study.tell(s.number, status="succeeded", value=1.0)
    left_running = [study.ask(), study.ask()]
    del study  # the parent dies here, two trials still RUNNING in the storage

    resumed = SweepStudy.open(matrix(GRID), study_name="crash", storage=url, resume=True)
    assert resumed.recover() == [3, 4]
    asked = _drain(resumed)
    by_index = {s.index: s for s in asked}
    assert sorted(by_index) == list(range(3, 30))
    assert [by_index[s.index].params for s in left_running] == [s.params for s in left_running]
    assert {by_index[3].number, by_index[4].number}.isdisjoint(s.number for s in left_running)
    history = resumed.history()
    assert [r.index for r in history] == list(range(30))
    assert all(r.status == "succeeded" for r in history)
    assert resumed.is_finished()


def test_stop_drops_queued_trials() -> None:
    study = SweepStudy.open(matrix(GRID), study_name="stop", storage=":memory:")
    running = study.ask()
    study.stop("loss reached 0.0")
    assert study.ask() is None
    assert not study.is_finished()
    study.tell(running.number, status="stopped")
    assert study.is_finished()
    assert study.stop_reason == "loss reached 0.0"
    assert [r.status for r in study.history()] == ["stopped"]


def _worker(url: str, out: str, start: Any) -> None:
    study = SweepStudy.open(matrix(GRID), study_name="shared", storage=url, resume=True)
    start.wait(60)  # both processes ask from the same moment (spawning one can take seconds)
    seen = []
    while (s := study.ask()) is not None:
        seen.append(s.index)
        time.sleep(0.01)  # a trial takes some time, so the other process gets its turn
        study.tell(s.number, status="succeeded", value=float(s.index))
    Path(out).write_text(" ".join(map(str, seen)))


@pytest.mark.parametrize("file", ["shared.journal", "shared.db"])
def test_two_processes_share_a_grid_without_running_a_point_twice(
    tmp_path: Path, file: str
) -> None:
    """The default journal file and an SQLite database, each shared by two processes."""
    url = str(tmp_path / file)
    SweepStudy.open(matrix(GRID), study_name="shared", storage=url)
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"w{i}.txt" for i in range(2)]
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_worker, args=(url, str(out), start)) for out in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    runs = [[int(i) for i in out.read_text().split()] for out in outs]
    everything = runs[0] + runs[1]
    assert sorted(everything) == list(range(30))  # all of them, none twice
    assert all(runs), "both processes got work"


def test_sampled_kinds_resume_with_the_same_params(tmp_path: Path) -> None:
    data = {
        "kind": "hyperopt",
        "algorithm": "tpe",
        "numRuns": 6,
        "seed": 2,
        "metric": {"name": "loss", "optimization": "minimize"},
        "params": {"x": {"kind": "uniform", "value": [-1, 1]}},
    }
    url = str(tmp_path / "h.db")
    study = SweepStudy.open(matrix(data), study_name="tpe", storage=url)
    first = study.ask()
    study.tell(first.number, status="succeeded", value=first.params["x"] ** 2)
    crashed = study.ask()
    resumed = SweepStudy.open(matrix(data), study_name="tpe", storage=url, resume=True)
    assert resumed.recover() == [crashed.index]
    retry = resumed.ask()
    assert (retry.index, retry.params) == (crashed.index, crashed.params)
    assert retry.number != crashed.number
    rest = _drain(resumed, lambda s: s.params["x"] ** 2)
    assert sorted([first.index, retry.index] + [s.index for s in rest]) == list(range(6))
