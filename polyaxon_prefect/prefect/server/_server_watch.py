"""Noticing, within seconds, that the Prefect server a run uses went away.

Without this, a server killed under a run left the CLI in Prefect's client retries for minutes,
then two connection tracebacks and exit 1, although the job itself had succeeded. With it, the
CLI says so in one line at once, lets the running job finish (its run directory holds what it
wrote), and ends with the job's own status; the flow run it could no longer finish stays in the
session's journal with how it ended, so the next command on that database writes that
(`_settle`), or marks it crashed when the run could not report.

Standard library only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from polyaxon_prefect.client.server._local_server import health

if TYPE_CHECKING:
    from polyaxon_prefect.prefect.server._connect import Connection
    from polyaxon_prefect.runtime._result import RunResult

__all__ = ["ResultInHand", "ServerGone", "ServerWatch", "server_gone", "wait_for_job"]

_GONE: list[str] = []
"""The address of the run's server once it is known to be gone (this process's, at most one):
the runners read it (`server_gone`) to start nothing more."""


def server_gone() -> str | None:
    """The address of the run's server when it stopped answering during the run, else None.
    A DAG starts no further op then: one would run unseen by any server, be marked crashed by
    the next command while it runs, and could not be stopped through the API."""
    return _GONE[0] if _GONE else None


_IN_HAND = [0]
"""How many jobs of this process run or hold a result not yet written (`ResultInHand`)."""
_IN_HAND_LOCK = threading.Lock()


class ResultInHand:
    """Held by a job from its process's start until its result is written where it outlives
    the server (a sweep trial's end, told to its study): a run whose server went away waits
    for it before it exits (`wait_for_job`). Its process may be gone seconds before that
    result is written (a trial that logged thousands of steps as it ended tells each to the
    pruner first), and an exit then loses a finished trial: ``--resume`` would run it again.
    Released while the job only waits (for GPUs): nothing more starts once the server is
    gone, and a wait is not to be waited for."""

    def __init__(self) -> None:
        self._held = False

    def hold(self) -> None:
        with _IN_HAND_LOCK:
            if not self._held:
                self._held = True
                _IN_HAND[0] += 1

    def release(self) -> None:
        with _IN_HAND_LOCK:
            if self._held:
                self._held = False
                _IN_HAND[0] -= 1


def _results_in_hand() -> bool:
    with _IN_HAND_LOCK:
        return _IN_HAND[0] > 0


class ServerGone(Exception):
    """The server stopped answering during the run."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class ServerWatch:
    """Checks, at most once per ``interval`` seconds, that the run's server is alive: a
    temporary server by its process, any other by its health check. A server is gone when
    nothing serves its address ``misses`` checks in a row (refused: it died), or when it has
    been silent for ``patience`` seconds (connections taken, no answer: a hung server). A
    server that answers slowly on a loaded machine is silent for a few checks, not gone: the
    run goes on.

    Only a server that answered can go away: one we started answered before the run began; a
    server the user chose counts once a health check has reached it. A user's server that was
    never reachable is not "gone mid-run": the run's first request fails and says why.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        interval: float = 1.0,
        misses: int = 3,
        patience: float = 60.0,
        timeout: float = 2.0,
    ) -> None:
        self.connection = connection
        self.interval = interval
        self.misses = misses
        self.patience = patience
        self.timeout = timeout
        self._failed = 0
        self._answered = not connection.user_chosen
        self._last_answer = time.monotonic()
        self._next = self._last_answer + interval

    def check(self) -> None:
        """Raise `ServerGone` once the server is known to be gone."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        temporary = self.connection.temporary
        if temporary is not None:
            if temporary.process.poll() is not None:
                raise _gone(self.connection.ui_url)
            return
        answer = health(self.connection.api_url, self.timeout)
        if answer == "answers":
            self._failed = 0
            self._answered = True
            self._last_answer = time.monotonic()
        elif answer == "unreachable":
            self._failed += 1
        if not self._answered:
            return
        if self._failed >= self.misses or time.monotonic() - self._last_answer >= self.patience:
            raise _gone(self.connection.ui_url)


def _gone(url: str) -> ServerGone:
    if not _GONE:
        _GONE.append(url)
    return ServerGone(url)


def wait_for_job(
    outcomes: list[RunResult], jobs_running: Callable[[], bool], *, settle: float = 3.0
) -> RunResult | None:
    """Wait for the run's own result (``outcomes`` gets it when the op ends), or, for a run
    that cannot report one without the server (a sweep, an op stuck in the client's retries),
    until ``jobs_running`` (a job process of this session, a DAG still deciding) and every
    `ResultInHand` have been false for ``settle`` seconds; the result, or None."""
    quiet_since: float | None = None
    while not outcomes:
        if jobs_running() or _results_in_hand():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settle:
            return None
        time.sleep(0.1)
    return outcomes[-1]
