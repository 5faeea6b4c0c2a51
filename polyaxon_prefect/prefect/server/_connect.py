"""Which Prefect server a command uses: one rule for every entry point.

``run``, ``deploy``, ``ls``, ``get``, ``polyaxon_prefect.run`` and ``to_flow`` all call
`connect` before they talk to Prefect:

1. ``PREFECT_API_URL`` chosen by the user (the environment, the active Prefect profile, or
   settings already in force in this process) always wins. One that does not answer is an
   error naming it and where it is set, unless this home's background server once served
   that very address (``server start --set-profile``, then stopped): that one is started
   again there.
2. Otherwise the local background server of this Prefect home (`_background_server`): used
   when it runs, started when it does not (said in one line), left running for the next
   command and stopping itself after ``POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT`` seconds without
   use (default 600). The first command pays the server's start once; every later one, and
   ``prefect worker start`` / ``prefect deployment run`` pointed at it, share it.
   Where another program holds its port (another user's server, another home's), it takes a
   free one, recorded in the home, where the next command finds it.
3. Where that server cannot start (a read-only home, a port a ``PREFECT_API_URL`` names), or
   with ``POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT=0`` when none runs (``polyaxon-prefect server
   start`` still starts one, and commands use it), a temporary server for this command alone
   (`_server`), stopped at its end: the command says why in one line and never hangs.

Whatever was chosen is put in ``PREFECT_API_URL`` of this process (and of the processes it
starts). Standard library only until a server is known: the first line reaches the terminal
before Prefect is imported.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from polyaxon_prefect.client import profile_api_url as _profile_api_url
from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.prefect.server._server import LocalServer, ServerStartError

__all__ = [
    "ENV_IDLE_TIMEOUT",
    "ENV_PORT",
    "Connection",
    "configured_api_url",
    "connect",
    "idle_timeout",
]

ENV_IDLE_TIMEOUT = "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT"
ENV_PORT = "POLYAXON_PREFECT_SERVER_PORT"
DEFAULT_IDLE_TIMEOUT = 600.0
Notify = Callable[[str], None]


@dataclass
class Connection:
    """The server a command uses."""

    api_url: str
    temporary: LocalServer | None = None
    """A server started for this command alone: stop it at the end (`close`)."""
    user_chosen: bool = False
    saved_env: dict[str, str | None] | None = None
    """What a temporary connection changed in this process's environment, put back by
    `close` (a later run in the same process must not find a dead server's address)."""

    @property
    def outlives_command(self) -> bool:
        """Whether a link to its UI still works once the command returns."""
        return self.temporary is None

    @property
    def ui_url(self) -> str:
        return self.api_url.rstrip("/").removesuffix("/api")

    def close(self) -> None:
        """Stop a temporary server (after Prefect's queued logs and events reach it)."""
        if self.temporary is not None:
            _drain_prefect_workers()
            self.temporary.stop()
            self.temporary = None
            for name, value in (self.saved_env or {}).items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            _refresh_prefect_settings()


def idle_timeout() -> float:
    """``POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT`` in seconds (0: a temporary server per run)."""
    raw = os.environ.get(ENV_IDLE_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_IDLE_TIMEOUT
    try:
        value = float(raw)
    except ValueError as exc:
        raise PolyaxonPrefectError(
            f"${ENV_IDLE_TIMEOUT} must be a number of seconds (0 for a temporary server per "
            f"run), got {raw!r}"
        ) from exc
    return max(value, 0.0)


def _port() -> int:
    """``POLYAXON_PREFECT_SERVER_PORT``: where the background server listens (default 4200,
    Prefect's own)."""
    from polyaxon_prefect.prefect.server._background_server import DEFAULT_PORT

    raw = os.environ.get(ENV_PORT, "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise PolyaxonPrefectError(f"${ENV_PORT} must be a TCP port (1-65535), got {raw!r}")
    return int(raw)


_FROM_ENVIRONMENT = "the environment"
_FROM_SETTINGS = "this process's Prefect settings"


def _chosen_api_url() -> tuple[str, str] | None:
    """The API URL the user chose and where it is set (see the module's rule 1)."""
    if "prefect.settings" in sys.modules:  # settings in force here (a test harness, a context)
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url
        if not url:
            return None
        url = str(url).rstrip("/")
        if os.environ.get("PREFECT_API_URL"):
            return url, _FROM_ENVIRONMENT
        profile = _profile_api_url()
        if profile is not None and profile[0].rstrip("/") == url:
            return url, f"the Prefect profile {profile[1]!r}"
        return url, _FROM_SETTINGS
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"].rstrip("/"), _FROM_ENVIRONMENT
    profile = _profile_api_url()
    if profile is None:
        return None
    return profile[0].rstrip("/"), f"the Prefect profile {profile[1]!r}"


def configured_api_url() -> str | None:
    """The API URL the user chose, if any (see the module's rule 1)."""
    chosen = _chosen_api_url()
    return chosen[0] if chosen else None


class UnansweredApiUrl(PolyaxonPrefectError):
    """The ``PREFECT_API_URL`` the user chose does not answer (and was never this home's own
    background server): an error naming it, never a silent switch to another server."""


def _unanswered(url: str, source: str) -> UnansweredApiUrl:
    if source == _FROM_ENVIRONMENT:
        fix = "unset PREFECT_API_URL"
    elif source == _FROM_SETTINGS:
        fix = "point PREFECT_API_URL at a live server"
    else:
        fix = "`prefect config unset PREFECT_API_URL`"
    return UnansweredApiUrl(
        f"the Prefect server at PREFECT_API_URL={url} (set in {source}) does not answer: "
        f"start it, or {fix} to use this home's local server (`polyaxon-prefect server start`)"
    )


def _answers(api_url: str, timeout: float = 5.0) -> bool:
    """Whether anything answers HTTP at ``api_url``: a server that refuses the health check
    (a proxy asking for a key, Prefect Cloud without one) still answers; its own error says
    what is wrong, where a dead address has no one to say it."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


_TEMPORARY_ENV = ("PREFECT_API_URL", "PREFECT_UI_URL")


def _refresh_prefect_settings() -> None:
    if "prefect.context" in sys.modules:
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()


def _use(api_url: str) -> None:
    """Point this process (and what it starts) at ``api_url``. Prefect's settings are rebuilt
    only when Prefect is loaded and they name another server (a rebuild is not free)."""
    os.environ["PREFECT_API_URL"] = api_url
    if "prefect.context" not in sys.modules:
        return  # Prefect reads the environment when it is first imported
    from prefect.settings import get_current_settings

    current = get_current_settings().api.url
    if current is None or str(current).rstrip("/") != api_url.rstrip("/"):
        _refresh_prefect_settings()


def _our_port(api_url: str) -> int | None:
    """The port of a loopback ``http://127.0.0.1:PORT/api`` URL (the background server's
    shape, e.g. after ``server start --set-profile``), else None."""
    parts = urllib.parse.urlsplit(api_url)
    loopback = parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost")
    if loopback and parts.path.rstrip("/") == "/api" and parts.port:
        return parts.port
    return None


def connect(notify: Notify, *, purpose: str = "this run") -> Connection:
    """Choose the server for this command (see the module's rules), point this process at it
    and return it; ``notify`` gets the one line that says which. The flow runs that dead
    sessions left unfinished on that database are marked crashed first
    (`recover_stale_sessions`: e.g. a run whose server was killed under it).

    Raises:
        ServerStartError: not even a temporary server could start (with what to do).
    """
    from polyaxon_prefect.runtime.session._session import (
        home_database_target,
        recover_stale_sessions,
    )

    connection = _choose(notify, purpose)
    target = connection.api_url if connection.user_chosen else home_database_target()
    recover_stale_sessions(connection.api_url, target)
    return connection


def _choose(notify: Notify, purpose: str) -> Connection:
    from polyaxon_prefect.prefect.server import _background_server as background

    chosen_from = _chosen_api_url()
    idle = idle_timeout()
    if chosen_from is not None:
        chosen, source = chosen_from
        if _answers(chosen):
            _use(chosen)
            return Connection(chosen, user_chosen=True)
        # Started again only where it was this home's own background server (e.g. named by
        # `server start --set-profile`, then stopped idle); any other address is the user's
        # server, and their runs must never land on one they did not choose.
        port = _our_port(chosen)
        ours = port is not None and any(_our_port(url) == port for url in background.served_here())
        if not ours or port is None or idle == 0:
            raise _unanswered(chosen, source)
        return _background(notify, idle, port=port, purpose=purpose, chosen=True)
    if idle == 0 and background.running_server() is None:
        return _temporary(notify)
    return _background(notify, idle, port=_port(), purpose=purpose)


def _background(
    notify: Notify, idle: float, *, port: int, purpose: str, chosen: bool = False
) -> Connection:
    from polyaxon_prefect.prefect.server import _background_server as background

    background.hold_lease()  # the server must not stop itself under this command
    running = background.running_server()
    if running is None:
        # a port the user named in PREFECT_API_URL is kept; the default one, held by another
        # program, is traded for a free one (the home's record tells later commands which)
        taken = port if chosen else background.port_to_take("127.0.0.1", port)
        held = "" if taken == port else f"; port {port} is held by another program"
        notify(
            f"starting the local Prefect server at http://127.0.0.1:{taken} "
            f"(once; it stops after {_minutes(idle)} without use; UI at that address{held})"
        )
        try:
            running, _started = background.start_server(
                port=taken, idle_timeout=idle, any_free_port=not chosen
            )
        except background.ServerCommandError as error:
            if isinstance(error, background.ServerHomeError):  # a temporary one fails alike
                raise ServerStartError(
                    f"could not start the local Prefect server: {error}"
                ) from error
            why = str(error).splitlines()[0]
            notify(
                f"could not start the local Prefect server: {why}; {purpose} uses a temporary one"
            )
            return _temporary(notify)
    else:
        notify(
            f"using the local Prefect server at {running.url} "
            "(`polyaxon-prefect server stop` to stop it)"
        )
    _use(running.api_url)
    return Connection(running.api_url)


def _temporary(notify: Notify) -> Connection:
    from polyaxon_prefect.prefect.server._server import start_local_server

    server = start_local_server(notify=notify)
    connection = Connection(server.api_url, temporary=server)
    # No UI, and gone when the command returns: Prefect's "View at" links would be dead.
    connection.saved_env = {name: os.environ.get(name) for name in _TEMPORARY_ENV}
    os.environ["PREFECT_UI_URL"] = ""
    _use(server.api_url)
    return connection


def _minutes(seconds: float) -> str:
    if seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} s"


def _drain_prefect_workers() -> None:
    """Ship the logs and events still queued in Prefect's background workers while the server
    is up (Prefect would try at interpreter exit, after the server is gone)."""
    import contextlib

    if "prefect" not in sys.modules:
        return
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=60)
    with contextlib.suppress(Exception):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=5)
