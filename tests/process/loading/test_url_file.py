"""A Polyaxonfile read from a URL (``run --url``) over a real loopback HTTP server: its
``pathRef`` is relative to the URL, its problems name the URL and line, and the fetch has
``urlRef``'s limits and errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading import load_polyaxonfile

pytestmark = pytest.mark.server

COMPONENT = """\
version: 1.1
kind: component
name: remote
inputs: [{name: max_loss, type: float, value: 0.1, isOptional: true}]
run: {kind: job, container: {command: [echo, "{{ max_loss }}"]}}
"""
FILES = {
    "/a/op.yml": "version: 1.1\nkind: operation\npathRef: ../lib/component.yaml\n",
    "/lib/component.yaml": COMPONENT,
    "/a/bad.yml": "version: 1.1\nkind: operation\npathRef: ../lib/component.yaml\n"
    "params:\n  loss: {value: 1}\n",
    "/a/broken.yml": "version: 1.1\nkind: [unclosed\n",
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow.yml":
            time.sleep(1.5)
        body = FILES.get(self.path)
        if self.path == "/big.yml":
            body = "# " + "x" * 5000 + "\n"
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client hanging up on the slow and big answers is the point of those tests


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_path_ref_is_fetched_relative_to_the_url(origin: str, tmp_path: Path) -> None:
    preset = tmp_path / "preset.yaml"
    preset.write_text("isPreset: true\nparams: {max_loss: {value: 0.5}}\n", encoding="utf-8")
    loaded = load_polyaxonfile(f"{origin}/a/op.yml", [preset])
    assert loaded.component is not None and loaded.component.name == "remote"
    assert loaded.files == (f"{origin}/a/op.yml", str(preset), f"{origin}/lib/component.yaml")
    assert loaded.params["max_loss"] == 0.5


def test_a_problem_names_the_url_and_line(origin: str) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(f"{origin}/a/bad.yml")
    [problem] = info.value.problems
    assert problem.format().startswith(f"{origin}/a/bad.yml:5:3: params.loss: ")
    assert "did you mean `max_loss`?" in (problem.hint or "")


def test_a_yaml_error_names_the_url(origin: str) -> None:
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(f"{origin}/a/broken.yml")
    assert info.value.problems[0].file == f"{origin}/a/broken.yml"


def test_http_errors_and_limits_are_urlrefs(origin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PolyaxonfileError, match="answered HTTP 404") as info:
        load_polyaxonfile(f"{origin}/nope.yml")
    assert info.value.problems[0].file == f"{origin}/nope.yml"
    started = time.monotonic()
    with pytest.raises(PolyaxonfileError, match=r"no answer within|took longer|stalled"):
        load_polyaxonfile(f"{origin}/slow.yml", url_timeout=0.3)
    assert time.monotonic() - started < 1.4
    monkeypatch.setenv("POLYAXON_PREFECT_URL_MAX_BYTES", "1000")
    with pytest.raises(PolyaxonfileError, match="1000-byte limit"):
        load_polyaxonfile(f"{origin}/big.yml")
