"""A run's views (artifacts, labels) reach a busy API without Prefect's 2 s back-off.

An SQLite-backed Prefect server answers ``503`` while it is still writing the previous run's
events. Prefect's client sleeps 2 s (then 4, 8) before it tries again, and a run's end waits
for its views (`flush_artifacts`): a one-op DAG right after another run ended 2 s late, one
run in two. The views go through `api_request`'s quick retry instead. The server here is a
loopback HTTP server that answers ``503`` to the first requests of each path, as a busy
server does, then what Prefect's server answers.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from polyaxon_prefect.prefect._artifacts import markdown_artifact, progress_artifact
from polyaxon_prefect.prefect.watch._progress_publish import publish_label

pytestmark = pytest.mark.server

BUSY_ANSWERS = 2


class _BusyApi(BaseHTTPRequestHandler):
    seen: Counter[str] = Counter()
    bodies: list[tuple[str, str, dict[str, object]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        key = f"{self.command} {self.path}"
        self.seen[key] += 1
        if self.seen[key] <= BUSY_ANSWERS:
            payload, status = b'{"exception_message": "Service Unavailable"}', 503
        else:
            self.bodies.append((self.command, self.path, body))
            payload, status = json.dumps({"id": str(uuid.uuid4()), **body}).encode(), 201
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_PATCH = _answer

    def do_GET(self) -> None:  # the client's CSRF token: none here (a server without CSRF)
        payload = b'{"detail": "Not Found"}'
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def busy_api() -> Iterator[type[_BusyApi]]:
    _BusyApi.seen = Counter()
    _BusyApi.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BusyApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    try:
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield _BusyApi
    finally:
        server.shutdown()
        server.server_close()


def test_an_artifact_is_created_through_503s_without_the_2s_back_off(busy_api) -> None:
    started = time.monotonic()
    markdown_artifact("# report", key="dag-report", description="the dag")
    elapsed = time.monotonic() - started
    assert busy_api.seen["POST /api/artifacts/"] == BUSY_ANSWERS + 1
    (method, path, body) = busy_api.bodies[-1]
    assert (method, path) == ("POST", "/api/artifacts/")
    assert body["type"] == "markdown" and body["key"] == "dag-report"
    assert body["data"] == "# report"
    assert elapsed < 1.5, f"{elapsed:.2f} s: Prefect's back-off (2 s) was slept"


def test_a_progress_artifact_is_created_through_503s_and_its_id_returned(busy_api) -> None:
    started = time.monotonic()
    artifact_id = progress_artifact(40.0, key="sweep-progress", description="2 of 5 trials")
    elapsed = time.monotonic() - started
    assert isinstance(artifact_id, uuid.UUID)
    assert busy_api.seen["POST /api/artifacts/"] == BUSY_ANSWERS + 1
    body = busy_api.bodies[-1][2]
    assert body["type"] == "progress" and body["data"] == 40.0
    assert elapsed < 1.5, f"{elapsed:.2f} s: Prefect's back-off (2 s) was slept"


def test_a_progress_label_is_sent_through_503s_on_a_new_client(busy_api) -> None:
    flow_run_id = uuid.uuid4()
    started = time.monotonic()
    publish_label(flow_run_id, {"done": 2, "total": 5}, None)
    elapsed = time.monotonic() - started
    key = f"PATCH /api/flow_runs/{flow_run_id}/labels"
    assert busy_api.seen[key] == BUSY_ANSWERS + 1
    labels = busy_api.bodies[-1][2]
    assert json.loads(str(next(iter(labels.values()))))["done"] == 2
    assert elapsed < 1.5, f"{elapsed:.2f} s: Prefect's back-off (2 s) was slept"


def test_the_kind_label_is_tried_a_bounded_number_of_times_then_through(busy_api) -> None:
    """`label_kind` tries the label a few times at the run's start (False: the server is
    busy, it goes to the background), and the background call goes on through the 503s."""
    from polyaxon_prefect.prefect.runs._run_record import _label

    flow_run_id = uuid.uuid4()
    key = f"PATCH /api/flow_runs/{flow_run_id}/labels"
    assert _label(flow_run_id, "dag", attempts=BUSY_ANSWERS) is False
    assert busy_api.seen[key] == BUSY_ANSWERS  # no more than it was given
    assert _label(flow_run_id, "dag") is True
    assert busy_api.bodies[-1] == (
        "PATCH",
        f"/api/flow_runs/{flow_run_id}/labels",
        {"polyaxon.kind": "dag"},
    )
