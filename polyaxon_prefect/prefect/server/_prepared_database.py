"""What a Prefect home's SQLite database already holds, so the next server start skips redoing it.

Prefect's server, at each start, checks the database against every migration (alembic loads all
its revision scripts) and, unless its memo matches, imports every installed Prefect collection
(``prefect_kubernetes`` pulls in a Kubernetes client: seconds) to register their block types.
Once a server of this home has started, both are done for this database: a small record next
to it (``.polyaxon-prefect-db-prepared.json``) says so, for the installed Prefect, its
migrations and its collections (`environment_key`). The next start on the same database, with
the same installation, finds the database at the recorded revision and its block types present,
and starts without the check, the imports and the registration; anything else (another Prefect,
a collection installed, a database replaced or reset, a database URL set) makes Prefect do
both again, as it would without the record.

The record travels with a copy of the database (a home seeded from a template database gets
both), which Prefect's own memo cannot (its key holds the database's path).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefect.settings import Settings

__all__ = [
    "RECORD_FILE",
    "environment_key",
    "prepared_settings",
    "record_prepared",
    "skipping_prepared",
]

RECORD_FILE = ".polyaxon-prefect-db-prepared.json"
_SQLITE_PREFIX = "sqlite+aiosqlite:///"


def _migrations_fingerprint() -> str:
    """The names of the installed Prefect's SQLite migrations (an edited install changes them
    without changing its version), hashed; read from the files, without importing Prefect."""
    spec = importlib.util.find_spec("prefect")
    names: list[str] = []
    for location in (spec.submodule_search_locations or []) if spec else []:
        versions = Path(location) / "server" / "database" / "_migrations" / "versions" / "sqlite"
        with contextlib.suppress(OSError):
            names += sorted(path.name for path in versions.glob("*.py"))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def environment_key() -> dict[str, Any]:
    """What decides the database's schema and the block types a server registers: the Prefect
    version, its migrations, and each installed Prefect collection (their versions)."""
    collections = sorted(
        f"{entry.value}=={entry.dist.version if entry.dist else '?'}"
        for entry in importlib.metadata.entry_points(group="prefect.collections")
    )
    return {
        "prefect": importlib.metadata.version("prefect"),
        "migrations": _migrations_fingerprint(),
        "collections": collections,
    }


def _read(database: Path, query: str) -> Any:
    """One value from the database (read-only), or None when it cannot say."""
    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
            row = db.execute(query).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def _revision(database: Path) -> str | None:
    value = _read(database, "SELECT version_num FROM alembic_version")
    return value if isinstance(value, str) else None


def _has_block_types(database: Path) -> bool:
    count = _read(database, "SELECT count(*) FROM block_type")
    return isinstance(count, int) and count > 0


def _home_database(settings: Settings) -> Path | None:
    """The home's SQLite file when the server uses it (Prefect's default), else None."""
    secret = settings.server.database.connection_url
    url = secret.get_secret_value() if secret is not None else ""
    database = Path(settings.home).expanduser() / "prefect.db"
    if not url.startswith(_SQLITE_PREFIX):
        return None
    with contextlib.suppress(OSError):
        if Path(url.removeprefix(_SQLITE_PREFIX)).resolve() == database.resolve():
            return database
    return None


def _record(home: Path) -> dict[str, Any]:
    try:
        record = json.loads((home / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def prepared_settings(settings: Settings) -> dict[str, bool]:
    """The settings updates (Prefect's setting names) that skip what the record says this
    home's database already holds; empty when nothing may be skipped."""
    database = _home_database(settings)
    if database is None:
        return {}
    record = _record(database.parent)
    revision = _revision(database)
    if revision is None or record.get("key") != environment_key():
        return {}
    if record.get("revision") != revision:  # another database, or one reset or downgraded
        return {}
    updates = {"server.database.migrate_on_start": False}
    if record.get("blocks") and _has_block_types(database):
        # registration off; the memo off too, or it still imports every collection to hash them
        updates["server.register_blocks_on_start"] = False
        updates["server.memoize_block_auto_registration"] = False
    return updates


def record_prepared(settings: Settings) -> None:
    """Note what a server that has just started holds its database to (migrated to the
    installed Prefect's head; the block types registered, unless that is off): called once
    the server answers, in the server's own process, with the settings it had before
    `skipping_prepared` (the user's: a start that was told not to migrate proves nothing)."""
    database = _home_database(settings)
    revision = _revision(database) if database is not None else None
    if database is None or revision is None or not settings.server.database.migrate_on_start:
        return
    record = {
        "key": environment_key(),
        "revision": revision,
        "blocks": settings.server.register_blocks_on_start and _has_block_types(database),
    }
    path = database.parent / RECORD_FILE
    with contextlib.suppress(OSError):  # a note only: without it the next start does the work
        partial = path.with_name(f"{path.name}.{id(record)}.tmp")
        partial.write_text(json.dumps(record, indent=1), encoding="utf-8")
        partial.replace(path)


@contextlib.contextmanager
def skipping_prepared() -> Iterator[Settings]:
    """Within: Prefect's settings with what is already done skipped (see `prepared_settings`);
    yields the settings from before (for `record_prepared`). Create the app and run the server
    within, so the app Prefect's services ask for (by the settings' hash) is the one served."""
    from prefect.settings import get_current_settings, temporary_settings

    settings = get_current_settings()
    updates = prepared_settings(settings)
    if not updates:
        yield settings
        return
    with temporary_settings(updates=updates):
        yield settings
