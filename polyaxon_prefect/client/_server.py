"""The Prefect server a read-only verb talks to, found without Prefect: the rule of
`polyaxon_prefect.prefect.server._connect` in the cases that need no decision of Prefect's.

``PREFECT_API_URL`` in the environment, else the active Prefect profile's, else this home's
background server when its record names a live server process. Anything else (Prefect's
settings already loaded, an API key or auth string, a dead-session journal to settle first, no
server running, a malformed setting) is None: the flow layer's `connect` decides, as always.
The files read here are defined once, in `_local_server`, for the background server and the
sessions that write them.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from polyaxon_prefect.client._local_server import (
    hold_lease,
    home_database_target,
    journal_dir,
    pid_alive,
    prefect_home,
    running_server,
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


def _stale_sessions(target: str) -> bool:
    """Whether a dead session left a journal for the database ``target`` (`connect` marks its
    runs crashed before anything reads them). A dead session of another database is settled
    by the next command on that one: it must not keep every command here off the thin path."""
    try:
        journals = list(journal_dir().glob("*.journal"))
    except OSError:
        return True
    for journal in journals:
        try:
            header = journal.read_text(encoding="utf-8").splitlines()[:2]
            fields = dict(line.partition(" ")[::2] for line in header)
            pid = int(fields["pid"])
        except (OSError, KeyError, ValueError):
            return True
        # a header cut before its target line (the session died writing it) counts as ours
        if not pid_alive(pid) and fields.get("target", target) == target:
            return True
    return False


def _well_formed() -> bool:
    for name in _NUMBERS:
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                float(raw)
            except ValueError:
                return False
    return True


def thin_server() -> ThinServer | None:
    """The server to read from, known without Prefect; None: let `connect` decide."""
    if "prefect.settings" in sys.modules or not _well_formed():
        return None
    if any(os.environ.get(name) for name in _AUTH):
        return None
    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        # `connect`'s target for a server the user chose is its address
        return _unless_stale(ThinServer(chosen.rstrip("/")), chosen.rstrip("/"))
    found = _profile()
    if found is not None:
        profile, _active = found
        if any(profile.get(name) for name in _AUTH):
            return None
        if profile.get("PREFECT_API_URL"):
            url = str(profile["PREFECT_API_URL"]).rstrip("/")
            return _unless_stale(ThinServer(url), url)
    if _stale_sessions(home_database_target()):  # before the record: no health check to waste
        return None
    server = running_server()  # `connect`'s rule 3: the one reading of the record
    if server is None:
        return None
    url = server.url
    notice = f"using the local Prefect server at {url} (`polyaxon-prefect server stop` to stop it)"
    return ThinServer(server.api_url, notice)


def _unless_stale(server: ThinServer, target: str) -> ThinServer | None:
    return None if _stale_sessions(target) else server
