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


def _stale_sessions() -> bool:
    """Whether a dead session left a journal (its runs are marked crashed by `connect`)."""
    try:
        journals = list(journal_dir().glob("*.journal"))
    except OSError:
        return True
    for journal in journals:
        try:
            first = journal.read_text(encoding="utf-8").partition("\n")[0]
            key, _, pid = first.partition(" ")
            if key != "pid" or not pid_alive(int(pid)):
                return True
        except (OSError, ValueError):
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
    if "prefect.settings" in sys.modules or not _well_formed() or _stale_sessions():
        return None
    if any(os.environ.get(name) for name in _AUTH):
        return None
    chosen = os.environ.get("PREFECT_API_URL")
    if chosen:
        return ThinServer(chosen.rstrip("/"))
    found = _profile()
    if found is not None:
        profile, _active = found
        if any(profile.get(name) for name in _AUTH):
            return None
        if profile.get("PREFECT_API_URL"):
            return ThinServer(str(profile["PREFECT_API_URL"]).rstrip("/"))
    server = running_server()  # `connect`'s rule 3: the one reading of the record
    if server is None:
        return None
    url = server.url
    notice = f"using the local Prefect server at {url} (`polyaxon-prefect server stop` to stop it)"
    return ThinServer(server.api_url, notice)
