"""Shapes real Polyaxonfiles have that a stricter reading got wrong.

Each test is one class of file seen in public repositories (exported operations, hub components,
presets, DAG skeletons), written here as the smallest file that shows it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.unit.loading.test_real_world_shapes import _problems, _write

pytestmark = pytest.mark.server


# --- a reference next to an inline component -----------------------------------------------------


# --- a DAG with no operations --------------------------------------------------------------------


# --- the format is told by `version` first -------------------------------------------------------


# --- messages ------------------------------------------------------------------------------------


class _Missing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def missing_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Missing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_an_unfetchable_url_ref_does_not_hide_the_rest_of_the_file(
    tmp_path: Path, missing_server: str
) -> None:
    path = _write(
        tmp_path,
        "dag.yaml",
        f"""
        version: 1.1
        kind: component
        run:
          kind: dag
          operations:
          - name: train
            urlRef: {missing_server}/train.yaml
            params:
              lr: 0.1
          - name: report
            dependencies: [trian]
            component:
              inputs: [{{name: top, type: int}}]
              run:
                kind: job
                container: {{image: busybox}}
            params:
              top: many
        """,
    )
    problems = _problems(path).problems
    by_rule = {p.rule: p for p in problems}
    assert "HTTP 404" in by_rule["component_ref"].message
    assert by_rule["component_ref"].path == ("run", "operations", 0, "urlRef")
    assert by_rule["param_type"].path == ("run", "operations", 1, "params", "top", "value")
    assert any("trian" in p.message for p in problems)


# --- Polyaxon's hub components and the image values they take ------------------------------------
