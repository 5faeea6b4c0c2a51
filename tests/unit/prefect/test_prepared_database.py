"""What a home's record lets the background server skip at start (`_prepared_database`), read
against real copies of the migrated template database."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from polyaxon_prefect.prefect.server._prepared_database import (
    RECORD_FILE,
    environment_key,
    prepared_settings,
    record_prepared,
)
from tests.conftest import seed_prefect_home

if TYPE_CHECKING:
    from prefect.settings import Settings

# the template is made by starting a server once (then kept in pytest's cache folder)
pytestmark = pytest.mark.server

SKIP_ALL = {
    "server.database.migrate_on_start": False,
    "server.register_blocks_on_start": False,
    "server.memoize_block_auto_registration": False,
}


_SETTINGS_ENV = (
    "PREFECT_API_DATABASE_CONNECTION_URL",
    "PREFECT_SERVER_DATABASE_CONNECTION_URL",
    "PREFECT_API_DATABASE_MIGRATE_ON_START",
    "PREFECT_API_BLOCKS_REGISTER_ON_START",
)


def _settings(monkeypatch: pytest.MonkeyPatch, home: Path, **env: str) -> Settings:
    from prefect.settings import Settings

    for name in _SETTINGS_ENV:  # only what this call sets
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(home))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def _execute(database: Path, statement: str) -> None:
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.execute(statement)
        db.commit()


@pytest.fixture
def home(tmp_path: Path, prefect_database_template: Path) -> Path:
    return seed_prefect_home(tmp_path / "home", prefect_database_template)


def test_the_template_records_its_migration_and_its_block_types(
    prefect_database_template: Path,
) -> None:
    record = json.loads(prefect_database_template.with_name(RECORD_FILE).read_text())
    assert record["key"] == environment_key()
    assert record["blocks"] is True
    with contextlib.closing(sqlite3.connect(prefect_database_template)) as db:
        assert (
            db.execute("SELECT version_num FROM alembic_version").fetchone()[0]
            == (record["revision"])
        )
        slugs = {row[0] for row in db.execute("SELECT slug FROM block_type")}
    assert {"secret", "kubernetes-cluster-config"} <= slugs  # Prefect's own and a collection's


def test_a_seeded_home_skips_the_migration_check_and_the_block_registration(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    assert prepared_settings(_settings(monkeypatch, home)) == SKIP_ALL


def test_without_a_record_nothing_is_skipped(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    (home / RECORD_FILE).unlink()
    assert prepared_settings(_settings(monkeypatch, home)) == {}


def test_another_prefect_or_collection_does_both_again(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    for change in ({"prefect": "0.0.1"}, {"collections": ["prefect_aws==1.0"]}):
        record = json.loads((home / RECORD_FILE).read_text())
        record["key"] = {**record["key"], **change}
        (home / RECORD_FILE).write_text(json.dumps(record))
        assert prepared_settings(_settings(monkeypatch, home)) == {}


def test_a_database_at_another_revision_is_migrated(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    _execute(home / "prefect.db", "UPDATE alembic_version SET version_num = 'older'")
    assert prepared_settings(_settings(monkeypatch, home)) == {}


def test_a_database_without_block_types_gets_them_registered(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    _execute(home / "prefect.db", "DELETE FROM block_type")
    updates = prepared_settings(_settings(monkeypatch, home))
    assert updates == {"server.database.migrate_on_start": False}


def test_a_database_url_set_leaves_prefect_to_decide(
    monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path
) -> None:
    other = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    settings = _settings(monkeypatch, home, PREFECT_SERVER_DATABASE_CONNECTION_URL=other)
    assert prepared_settings(settings) == {}
    same = f"sqlite+aiosqlite:///{home / 'prefect.db'}"
    settings = _settings(monkeypatch, home, PREFECT_SERVER_DATABASE_CONNECTION_URL=same)
    assert prepared_settings(settings) == SKIP_ALL


def test_a_start_told_not_to_migrate_records_nothing(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    (home / RECORD_FILE).unlink()
    settings = _settings(monkeypatch, home, PREFECT_API_DATABASE_MIGRATE_ON_START="false")
    record_prepared(settings)
    assert not (home / RECORD_FILE).exists()
    record_prepared(_settings(monkeypatch, home))
    assert json.loads((home / RECORD_FILE).read_text())["blocks"] is True
    settings = _settings(monkeypatch, home, PREFECT_API_BLOCKS_REGISTER_ON_START="false")
    record_prepared(settings)
    assert json.loads((home / RECORD_FILE).read_text())["blocks"] is False
    assert prepared_settings(_settings(monkeypatch, home)) == {
        "server.database.migrate_on_start": False
    }
