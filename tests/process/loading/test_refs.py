"""urlRef over a real loopback HTTP server (the other references: tests/unit/loading)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._refs import (
    resolve_reference,
)
from tests.unit.loading.test_refs import COMPONENT, problem

pytestmark = pytest.mark.server


# --- urlRef -------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/component.yaml":
            self._send(200, COMPONENT.encode())
        elif self.path == "/slow.yaml":
            time.sleep(1.5)
            self._send(200, COMPONENT.encode())
        elif self.path == "/big.yaml":
            self._send(200, b"# " + b"x" * 5000 + b"\n")
        elif self.path == "/chunked-big.yaml":
            self.send_response(200)
            self.end_headers()  # no Content-Length: the size is only known while reading
            self.wfile.write(b"# " + b"x" * 5000 + b"\n")
        elif self.path == "/page.html":
            self._send(200, b"<!DOCTYPE html>\n<html><body>hi</body></html>\n", "text/html")
        else:
            self._send(404, b"not found")

    def _send(self, code: int, body: bytes, content_type: str = "text/yaml") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client hanging up on the slow and big answers is the point of those tests


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_url_ref_over_http(server, tmp_path):
    url = f"{server}/component.yaml"
    source = resolve_reference({"urlRef": url}, base_dir=tmp_path)
    assert source.data["run"]["kind"] == "job"
    assert source.file == url
    assert source.positions.file == url


def test_url_ref_http_error(server, tmp_path):
    with pytest.raises(PolyaxonfileError, match="answered HTTP 404") as info:
        resolve_reference({"urlRef": f"{server}/missing.yaml"}, base_dir=tmp_path)
    assert problem(info).path == ("urlRef",)


def test_url_ref_timeout(server, tmp_path):
    started = time.monotonic()
    with pytest.raises(PolyaxonfileError, match=r"no answer within 0\.3s|took longer|stalled"):
        resolve_reference({"urlRef": f"{server}/slow.yaml"}, base_dir=tmp_path, url_timeout=0.3)
    assert time.monotonic() - started < 1.4


@pytest.mark.parametrize("path", ["/big.yaml", "/chunked-big.yaml"])
def test_url_ref_too_large(server, tmp_path, path):
    with pytest.raises(PolyaxonfileError, match="1000-byte limit"):
        resolve_reference({"urlRef": server + path}, base_dir=tmp_path, url_max_bytes=1000)


def test_url_ref_web_page_is_not_a_component(server, tmp_path):
    with pytest.raises(PolyaxonfileError, match="does not hold a component") as info:
        resolve_reference({"urlRef": f"{server}/page.html"}, base_dir=tmp_path)
    assert "raw file" in problem(info).hint
