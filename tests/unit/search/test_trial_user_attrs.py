"""`set_trial_user_attrs`: a finished trial's attributes in one journal append, read back (in
this process and by a fresh replay of the file) exactly as one ``set_trial_user_attr`` each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.storages import InMemoryStorage, JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

from polyaxon_prefect.search._storage import set_trial_user_attrs

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
