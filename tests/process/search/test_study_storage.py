"""Sweep studies on disk (a journal file, an SQLite database): resumed after a crash, shared by
two processes. The in-memory ones are in tests/unit/search/test_study.py."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.search._optuna._study import SweepStudy, SweepStudyError
from tests.unit.search._matrices import matrix
from tests.unit.search.test_study import GRID, _drain

pytestmark = pytest.mark.slow


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


def _worker(url: str, out: str, start: Any) -> None:
    study = SweepStudy.open(matrix(GRID), study_name="shared", storage=url, resume=True)
    start.wait(60)  # both processes ask from the same moment (spawning one can take seconds)
    seen = []
    while (s := study.ask()) is not None:
        seen.append(s.index)
        time.sleep(0.01)  # a trial takes some time, so the other process gets its turn
        study.tell(s.number, status="succeeded", value=float(s.index))
    Path(out).write_text(" ".join(map(str, seen)))


@pytest.mark.process
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
