"""`set_trial_user_attrs`: a finished trial's attributes in one journal append, read back (in
this process and by a fresh replay of the file) exactly as one ``set_trial_user_attr`` each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import InMemoryStorage, JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import TrialState

from polyaxon_prefect.search._optuna._storage import finish_trial, set_trial_user_attrs

ATTRS: dict[str, Any] = {
    "status": "succeeded",
    "outputs": {"loss": 0.25},
    "metrics": {},
    "uuid": "abc",
    "message": "",
    "value": 0.25,
}


def _journal(path: Path) -> JournalStorage:
    return JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path))))


def _trial(storage: Any) -> tuple[int, int]:
    study = optuna.create_study(storage=storage, study_name="s")
    trial = study.ask()
    return study._study_id, trial._trial_id


def test_a_journal_gets_every_attr_in_one_synced_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "study.journal"
    storage = _journal(path)
    _, trial_id = _trial(storage)
    lines = len(path.read_text().splitlines())
    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(fd), real_fsync(fd))[1])
    set_trial_user_attrs(storage, trial_id, ATTRS)
    assert len(syncs) == 1
    assert len(path.read_text().splitlines()) == lines + len(ATTRS)
    assert storage.get_trial(trial_id).user_attrs == ATTRS
    assert _journal(path).get_trial(trial_id).user_attrs == ATTRS  # a fresh replay


def test_other_storages_get_one_call_per_attr() -> None:
    storage = InMemoryStorage()
    _, trial_id = _trial(storage)
    set_trial_user_attrs(storage, trial_id, ATTRS)
    assert storage.get_trial(trial_id).user_attrs == ATTRS


@pytest.mark.parametrize(
    ("state", "values"),
    [(TrialState.COMPLETE, [0.25]), (TrialState.FAIL, None), (TrialState.PRUNED, None)],
)
def test_finish_trial_writes_attrs_and_state_in_one_synced_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: TrialState, values: Any
) -> None:
    path = tmp_path / "study.journal"
    storage = _journal(path)
    _, trial_id = _trial(storage)
    lines = len(path.read_text().splitlines())
    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(fd), real_fsync(fd))[1])
    finish_trial(storage, trial_id, ATTRS, state=state, values=values)
    assert len(syncs) == 1
    assert len(path.read_text().splitlines()) == lines + len(ATTRS) + 1
    for reader in (storage, _journal(path)):  # this process, and a fresh replay of the file
        trial = reader.get_trial(trial_id)
        assert (trial.user_attrs, trial.state, trial.values) == (ATTRS, state, values)
        assert trial.datetime_complete is not None


def test_finish_trial_refuses_a_finished_trial_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    storage = _journal(path)
    _, trial_id = _trial(storage)
    finish_trial(storage, trial_id, {"a": 1}, state=TrialState.FAIL)
    before = path.read_text()
    with pytest.raises(UpdateFinishedTrialError):
        finish_trial(storage, trial_id, {"b": 2}, state=TrialState.COMPLETE, values=[1.0])
    assert path.read_text() == before
    storage.get_all_trials(storage.get_all_studies()[0]._study_id)  # later syncs still work
    with pytest.raises(ValueError, match="finished state"):
        finish_trial(storage, trial_id, {}, state=TrialState.RUNNING)


def test_finish_trial_on_other_storages_matches_the_journal() -> None:
    storage = InMemoryStorage()
    _, trial_id = _trial(storage)
    finish_trial(storage, trial_id, ATTRS, state=TrialState.COMPLETE, values=[0.5])
    trial = storage.get_trial(trial_id)
    assert (trial.user_attrs, trial.state, trial.values) == (ATTRS, TrialState.COMPLETE, [0.5])
