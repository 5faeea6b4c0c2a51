"""The Prefect server a read-only verb talks to, found without Prefect: the rule of
`polyaxon_prefect.prefect.server._connect` in the cases that need no decision of Prefect's.

``PREFECT_API_URL`` in the environment, else the active Prefect profile's, else this home's
background server when its record names a live server process. Anything else (Prefect's
settings already loaded, an API key or auth string, a dead-session journal to settle first, no
server running, a malformed setting) is None: the flow layer's `connect` decides, as always.
The files read here are defined once, in `_local_server` and `_session_journals`, for the
background server and the sessions that write them.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from polyaxon_prefect.client._declined import declined
from polyaxon_prefect.client.server._local_server import hold_lease, prefect_home, running_server
from polyaxon_prefect.client.server._session_journals import (
    dead_session_of,
    home_database_target,
    journal_dir,
    read_journal,
)

__all__ = ["ThinServer", "hold_lease", "profile_api_url", "thin_server"]

_AUTH = ("PREFECT_API_KEY", "PREFECT_API_AUTH_STRING")
_NUMBERS = ("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", "POLYAXON_PREFECT_SERVER_PORT")


@dataclass(frozen=True)
class ThinServer:
    api_url: str
    notice: str | None = None
    """The line `connect` says on stderr for this server (the background server's)."""


def _profile() -> tuple[dict[str, object], str] | None:
    home = prefect_home()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    return (data.get("profiles") or {}).get(active) or {}, str(active)


def profile_api_url() -> tuple[str, str] | None:
    """``PREFECT_API_URL`` of the active Prefect profile, read as Prefect reads it, and the
    profile's name."""
    found = _profile()
    if found is None:
        return None
    profile, active = found
    value = profile.get("PREFECT_API_URL")
    return (str(value), active) if value else None


def _stale_session(target: str) -> str | None:
    """Why a dead session's journal keeps a command on the database ``target`` off the thin
    way (`connect` marks its runs crashed before anything reads them), None when none does:
    `dead_session_of`, the rule `connect` settles by. A journal `connect` would not settle (a
    dead session of another database, one gone or not yet written) must not keep every
    command here off the thin path: nothing would ever clear it."""
    directory = journal_dir()
    try:
        paths = list(directory.glob("*.journal"))
    except OSError as error:
        return f"the session journals in {directory} cannot be listed ({error})"
    for path in paths:
        journal = read_journal(path)
        if journal is not None and dead_session_of(journal, target):
            return (
                f"the dead session {journal.pid} left runs on {target} to mark crashed first "
                f"({path})"
            )
    return None


def _malformed() -> str | None:
    for name in _NUMBERS:
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                float(raw)
            except ValueError:
                return f"{name}={raw!r} is not a number"
    return None


def thin_server() -> ThinServer | None:
    """The server to read from, known without Prefect; None: let `connect` decide (and, under
    ``POLYAXON_PREFECT_DEBUG_THIN``, say why: `_declined`)."""
    found_server, reason = _find()
    if found_server is None:
        declined(reason)
    return found_server


def _find() -> tuple[ThinServer | None, str]:
    if "prefect.settings" in sys.modules:
        return None, "Prefect's settings are loaded in this process already"
    malformed = _malformed()
    if malformed is not None:
        return None, malformed
    for name in _AUTH:
        if os.environ.get(name):
            return None, f"{name} is set (Prefect's client sends it)"
    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        # `connect`'s target for a server the user chose is its address
        return _unless_stale(ThinServer(chosen.rstrip("/")), chosen.rstrip("/"))
    found = _profile()
    if found is not None:
        profile, active = found
        for name in _AUTH:
            if profile.get(name):
                return None, f"the Prefect profile {active!r} sets {name}"
        if profile.get("PREFECT_API_URL"):
            url = str(profile["PREFECT_API_URL"]).rstrip("/")
            return _unless_stale(ThinServer(url), url)
    stale = _stale_session(home_database_target())  # before the record: no health check to waste
    if stale is not None:
        return None, stale
    server = running_server()  # `connect`'s rule 3: the one reading of the record
    if server is None:
        home = prefect_home()
        return None, f"no PREFECT_API_URL (environment or profile), no server running for {home}"
    url = server.url
    notice = f"using the local Prefect server at {url} (`polyaxon-prefect server stop` to stop it)"
    return ThinServer(server.api_url, notice), ""


def _unless_stale(server: ThinServer, target: str) -> tuple[ThinServer | None, str]:
    stale = _stale_session(target)
    return (None, stale) if stale is not None else (server, "")
