"""`ServerWatch`: only a server that answered can be reported gone, and a silent one only
after its patience.

A real HTTP server on loopback answers the health check, then is shut down; a port nothing
listens on stands for a server the user named that never answered; a port that listens and
never answers stands for a server too busy to answer in time.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from polyaxon_prefect.prefect.server import _server_watch
from polyaxon_prefect.prefect.server._server_watch import ServerGone, ServerWatch

pytestmark = pytest.mark.server


@pytest.fixture(autouse=True)
def _forget_gone_servers() -> Iterator[None]:
    """A `ServerGone` raised here marks this process's run server gone (`server_gone`): a later
    test in the same worker would start no DAG op."""
    yield
    _server_watch._GONE.clear()


@dataclass
class _Connection:
    api_url: str
    user_chosen: bool
    temporary: None = None
    ui_url: str = "http://127.0.0.1"


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        del args


@pytest.fixture
def health_server() -> Iterator[http.server.HTTPServer]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/api"


def _check(watch: ServerWatch, times: int) -> None:
    for _ in range(times):
        watch._next = 0.0  # the interval has passed
        watch.check()


def test_a_user_server_that_never_answered_is_not_reported_gone() -> None:
    watch = ServerWatch(_Connection(_dead_url(), user_chosen=True), interval=0.0, misses=2)
    _check(watch, 5)  # no ServerGone: the run's own request says the server cannot be reached


def test_a_user_server_that_answered_then_stopped_is_reported_gone(
    health_server: http.server.HTTPServer,
) -> None:
    url = f"http://127.0.0.1:{health_server.server_address[1]}/api"
    watch = ServerWatch(_Connection(url, user_chosen=True), interval=0.0, misses=2)
    _check(watch, 3)
    health_server.shutdown()
    health_server.server_close()
    _check(watch, 1)  # one miss: a busy server is not taken for a dead one
    with pytest.raises(ServerGone):
        _check(watch, 1)


def test_a_server_we_started_counts_as_answered_from_the_start() -> None:
    watch = ServerWatch(_Connection(_dead_url(), user_chosen=False), interval=0.0, misses=2)
    with pytest.raises(ServerGone):
        _check(watch, 2)


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A port that takes connections (the kernel's backlog) and never answers: a server busy
    past the health check's timeout, or a hung one."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/api"


def test_a_silent_server_is_busy_for_many_checks_then_gone_after_its_patience(
    silent_url: str,
) -> None:
    watch = ServerWatch(
        _Connection(silent_url, user_chosen=False),
        interval=0.0,
        misses=2,
        patience=60.0,
        timeout=0.05,
    )
    _check(watch, 5)  # five checks unanswered: a loaded machine's server, not a dead one
    watch._last_answer -= 60.0  # a minute without an answer
    with pytest.raises(ServerGone):
        _check(watch, 1)


def test_an_answer_between_misses_keeps_the_server(
    health_server: http.server.HTTPServer,
) -> None:
    url = f"http://127.0.0.1:{health_server.server_address[1]}/api"
    watch = ServerWatch(_Connection(url, user_chosen=True), interval=0.0, misses=2, timeout=0.05)
    _check(watch, 1)
    watch.connection.api_url = _dead_url()
    _check(watch, 1)  # one refusal
    watch.connection.api_url = url
    _check(watch, 1)  # it answers again: the count starts over
    watch.connection.api_url = _dead_url()
    _check(watch, 1)  # one refusal again, not two in a row
