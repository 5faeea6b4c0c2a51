"""The thin client's HTTP asks a busy server again as Prefect's client does (503, 429, ...,
a dropped kept-alive connection), so a loaded machine does not send its commands to the slow
flow layer; a server that keeps refusing is `ApiUnavailable` after the same retries."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from polyaxon_prefect.client.rest._http import ApiUnavailable, HttpApi


class _Busy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept-alive connections, as uvicorn's
    answers: list[int | None] = []  # None: drop the connection without an answer
    asked = 0

    def do_GET(self) -> None:
        cls = type(self)
        cls.asked += 1
        status = cls.answers.pop(0) if cls.answers else 200
        if status is None:
            self.close_connection = True
            return
        body = b'{"ok": true}' if status == 200 else b'{"detail": "busy"}'
        self.send_response(status)
        if status != 200:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def busy() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Busy.asked = 0
    try:
        yield f"http://127.0.0.1:{server.server_port}/api"
    finally:
        server.shutdown()
        server.server_close()


def test_a_busy_server_is_asked_again_until_it_answers(busy: str) -> None:
    _Busy.answers = [503, 429, None, 502]
    api = HttpApi(busy)
    try:
        assert api.get("/flow_runs/x") == {"ok": True}
    finally:
        api.close()
    assert _Busy.asked == 5


def test_a_server_that_stays_busy_is_unavailable_after_the_retries(
    busy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_CLIENT_MAX_RETRIES", "2")
    _Busy.answers = [503, 503, 503, 200]
    api = HttpApi(busy)
    try:
        with pytest.raises(ApiUnavailable, match="HTTP 503"):
            api.get("/flow_runs/x")
    finally:
        api.close()
    assert _Busy.asked == 3
