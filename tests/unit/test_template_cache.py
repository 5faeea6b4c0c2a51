"""The migrated template database is kept across test sessions, one per installed Prefect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.prefect.server import _prepared_database
from tests.conftest import ROOT, _template_folder, template_key


@pytest.mark.process  # a second pytest session
def test_a_second_session_reuses_the_template(
    pytestconfig: pytest.Config, prefect_database_template: Path
) -> None:
    folder = _template_folder(pytestconfig)
    assert prefect_database_template == folder / "template" / "prefect.db"
    assert ".pytest_cache" in folder.parts  # not the session's temporary folder
    made = prefect_database_template.parent.stat()
    test = "tests/unit/prefect/test_prepared_database.py"
    session = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-k", "a_seeded_home", test],
        cwd=ROOT,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert session.returncode == 0, session.stdout + session.stderr
    assert "1 passed" in session.stdout
    kept = prefect_database_template.parent.stat()
    # the same folder, not made again (a new one is renamed into place whole)
    assert (kept.st_ino, kept.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)
    assert not (folder / "making").exists()


def test_another_prefect_gets_a_template_of_its_own(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = _prepared_database.environment_key()
    key = template_key()
    assert template_key() == key  # stable
    for change in ({"prefect": "99.0.0"}, {"migrations": "0" * 64}, {"collections": []}):
        changed = {**installed, **change}
        monkeypatch.setattr(_prepared_database, "environment_key", lambda c=changed: c)
        assert template_key() != key
        other = _template_folder(pytestconfig)
        assert other.name == f"prefect-database-{template_key()}"
        assert not (other / "template").exists()  # made anew, under its own lock
