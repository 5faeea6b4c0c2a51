"""The default sweep storage: one journal per sweep, the old shared file as a fallback, a torn
last line repaired, a garbage line named in one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect._dashboard import DashboardError, dashboard_storage
from polyaxon_prefect.search._optuna._journal import (
    LEGACY_FILE,
    JournalDamagedError,
    journal_path,
    study_name_of,
    sweep_journals,
)
from polyaxon_prefect.search._optuna._study import SweepStudy

from ._matrices import matrix

pytestmark = [pytest.mark.fault]

GRID = {"kind": "grid", "params": {"x": {"kind": "choice", "value": [1, 2, 3, 4]}}}
OLD = "tune-0123456789-20240101-000000-aaaa"
NEW = "tune-0123456789-20240102-000000-bbbb"


def _open(root: Path, name: str, *, resume: bool = False) -> SweepStudy:
    return SweepStudy.open(matrix(GRID), study_name=name, artifacts_root=root, resume=resume)


def _run(study: SweepStudy, count: int) -> None:
    for _ in range(count):
        suggestion = study.ask()
        assert suggestion is not None
        study.tell(suggestion.number, status="succeeded", value=1.0)


def test_each_sweep_has_its_own_journal_and_resume_finds_the_newest(tmp_path: Path) -> None:
    _run(_open(tmp_path, NEW), 1)
    _open(tmp_path, OLD)
    other = _open(tmp_path, "other-9876543210-20240103-000000-cccc")

    assert other.storage_url == str(journal_path(tmp_path, other.name))
    assert [p.name for p in sweep_journals(tmp_path)] == [
        "other-9876543210-20240103-000000-cccc.journal",
        f"{NEW}.journal",
        f"{OLD}.journal",
    ]
    assert SweepStudy.latest(None, "tune-0123456789", artifacts_root=tmp_path) == NEW
    assert SweepStudy.latest(None, "tune-99", artifacts_root=tmp_path) is None
    assert not (tmp_path / LEGACY_FILE).exists()
    resumed = _open(tmp_path, NEW, resume=True)
    assert [r.status for r in resumed.history()] == ["succeeded"]


def test_an_odd_study_name_gets_a_file_name_of_its_own(tmp_path: Path) -> None:
    path = journal_path(tmp_path, "my sweep/1")
    assert path.parent == tmp_path / ".sweeps" and "/" not in path.name[:-8]
    assert path != journal_path(tmp_path, "my sweep?1")
    assert study_name_of(path) is None
    assert study_name_of(journal_path(tmp_path, NEW)) == NEW
    _open(tmp_path, "my sweep/1")
    assert SweepStudy.latest(None, "my", artifacts_root=tmp_path) == "my sweep/1"


def test_old_sweeps_in_the_shared_journal_still_resume(tmp_path: Path) -> None:
    legacy = str(tmp_path / LEGACY_FILE)
    _run(SweepStudy.open(matrix(GRID), study_name=OLD, storage=legacy), 2)
    size = Path(legacy).stat().st_size

    assert SweepStudy.latest(None, "tune-0123456789", artifacts_root=tmp_path) == OLD
    resumed = _open(tmp_path, OLD, resume=True)
    assert resumed.storage_url == legacy
    assert len(resumed.history()) == 2
    _open(tmp_path, NEW)  # a new sweep: its own file, the old one untouched
    assert Path(legacy).stat().st_size == size
    assert SweepStudy.latest(None, "tune-0123456789", artifacts_root=tmp_path) == NEW


def test_a_torn_last_line_is_cut_off_and_kept_aside(tmp_path: Path) -> None:
    _run(_open(tmp_path, NEW), 2)
    path = journal_path(tmp_path, NEW)
    whole = path.read_bytes()
    lines = whole.count(b"\n")
    with path.open("ab") as file:
        file.write(b'{"op_code":8,"worker_id":"w","trial_id":2,"user_attr":{"st')

    resumed = _open(tmp_path, NEW, resume=True)

    [note] = [w for w in resumed.warnings if "cut short" in w]
    assert note.startswith(f"{path}:{lines + 1}: ") and f"the {lines} line(s)" in note
    assert path.read_bytes() == whole
    assert (
        Path(f"{path}.torn").read_bytes()
        == b'{"op_code":8,"worker_id":"w","trial_id":2,"user_attr":{"st\n'
    )
    _run(resumed, 2)  # writing goes on after the good lines
    again = _open(tmp_path, NEW, resume=True)
    assert [r.status for r in again.history()] == ["succeeded"] * 4
    assert not [w for w in again.warnings if "cut short" in w]


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (b'{"op_code":8,"trial_id":0,"user_at\n', "not a JSON record"),
        (b"[1, 2]\n", "not an Optuna journal record"),
        (b"\xff\xfe garbage\n", "not a JSON record"),
    ],
)
def test_a_garbage_line_is_named_in_one_line(tmp_path: Path, bad: bytes, what: str) -> None:
    _run(_open(tmp_path, NEW), 1)
    path = journal_path(tmp_path, NEW)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:3], bad, *lines[3:]]))

    with pytest.raises(JournalDamagedError) as caught:
        _open(tmp_path, NEW, resume=True)

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:4: damaged sweep journal: line 4 is {what}")
    assert f"hint: move {path} aside" in message and "--storage" in message
    assert caught.value.problem.rule == "journal_damaged"
    _open(tmp_path, OLD)  # another sweep is not affected


def test_the_dashboard_opens_the_newest_sweep_of_an_op(tmp_path: Path) -> None:
    with pytest.raises(DashboardError, match=r"no sweeps in .*\.sweeps yet"):
        dashboard_storage(tmp_path, None)
    _open(tmp_path, OLD)
    _open(tmp_path, NEW)
    _open(tmp_path, "tuner-0123456789-20240101-000000-dddd")
    assert dashboard_storage(tmp_path, "tune") == str(journal_path(tmp_path, NEW))
    assert dashboard_storage(tmp_path, "tuner").endswith(
        "tuner-0123456789-20240101-000000-dddd.journal"
    )
    assert dashboard_storage(tmp_path, None) == str(journal_path(tmp_path, NEW))
    with pytest.raises(DashboardError, match=r"no sweep of op `train`.*sweeps there: tune, tuner"):
        dashboard_storage(tmp_path, "train")


def test_the_dashboard_falls_back_to_the_shared_journal(tmp_path: Path) -> None:
    legacy = tmp_path / LEGACY_FILE
    SweepStudy.open(matrix(GRID), study_name=OLD, storage=str(legacy))
    assert dashboard_storage(tmp_path, "tune") == str(legacy)
    assert dashboard_storage(tmp_path, None) == str(legacy)


RANDOM = {
    "kind": "random",
    "numRuns": 6,
    "seed": 5,
    "params": {"x": {"kind": "uniform", "value": "0:1"}},
}


def test_a_zero_byte_journal_resumes_as_a_new_sweep_of_that_name(tmp_path: Path) -> None:
    path = journal_path(tmp_path, NEW)
    path.parent.mkdir(parents=True)
    path.touch()  # what a sweep whose first write met a full disk leaves

    assert SweepStudy.latest(None, "tune-0123456789", artifacts_root=tmp_path) == NEW
    resumed = _open(tmp_path, NEW, resume=True)

    assert resumed.name == NEW and resumed.storage_url == str(path)
    assert [w for w in resumed.warnings if "never written" in w] == [
        f"{path}: the sweep's study was never written (its first write failed); starting it anew"
    ]
    _run(resumed, 4)
    assert [r.status for r in _open(tmp_path, NEW, resume=True).history()] == ["succeeded"] * 4


def test_a_study_whose_creation_was_cut_short_is_created_again_on_resume(tmp_path: Path) -> None:
    whole = SweepStudy.open(matrix(RANDOM), study_name=OLD, artifacts_root=tmp_path)
    points = [whole.ask() for _ in range(6)]
    path = journal_path(tmp_path, NEW)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = journal_path(tmp_path, OLD).read_bytes().splitlines(keepends=True)
    # the creation's lines up to the third queued trial: no `ready` yet (a full disk)
    cut = [i for i, line in enumerate(lines) if b'"op_code":4' in line][2]
    path.write_bytes(b"".join(lines[:cut]).replace(OLD.encode(), NEW.encode()))

    resumed = _open_random(tmp_path, NEW)
    assert resumed.finish_creation() == (
        "the sweep's study was not fully created (its storage could not be written): "
        "created again (2 queued trial(s) of the cut creation dropped)"
    )
    asked = [resumed.ask() for _ in range(6)]
    assert resumed.ask() is None
    assert [(s.index, s.params) for s in asked if s] == [(p.index, p.params) for p in points if p]
    for suggestion in asked:
        assert suggestion is not None
        resumed.tell(suggestion.number, status="succeeded", value=1.0)
    again = _open_random(tmp_path, NEW)
    assert again.finish_creation() is None and again.is_finished()
    assert [r.index for r in again.history()] == list(range(6))


def _open_random(root: Path, name: str) -> SweepStudy:
    return SweepStudy.open(matrix(RANDOM), study_name=name, artifacts_root=root, resume=True)


def test_a_journal_is_created_owner_only(tmp_path: Path) -> None:
    _open(tmp_path, NEW)
    assert journal_path(tmp_path, NEW).stat().st_mode & 0o777 == 0o600
