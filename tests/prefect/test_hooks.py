"""Polyaxon ``hooks`` run as Prefect state hooks, and notifier hub components posting to a
real HTTP server on loopback (the webhook's receiver is a stdlib server in this process)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.prefect import run


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, Any]]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).received.append((self.path, json.loads(body)))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Receiver", (_Receiver,), {"received": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()


def _connections(folder: Path, url: str) -> Path:
    path = folder / "connections.yaml"
    path.write_text(
        "connections:\n"
        f"- {{name: alerts, kind: webhook, schema: {{url: '{url}/alerts'}}}}\n"
        f"- {{name: team-chat, kind: slack, schema: {{url: '{url}/slack'}}}}\n"
    )
    return path


def _component(folder: Path, command: str, hooks: str) -> Path:
    path = folder / "train.yaml"
    path.write_text(
        f"""\
version: 1.1
kind: component
name: train
inputs: [{{name: lr, type: float, value: 0.1}}]
outputs: [{{name: loss, type: float}}]
hooks:
{hooks}
run:
  kind: job
  container:
    command: [python, -c, "{command}"]
"""
    )
    return path


HOOKS = """\
- {trigger: failed, hubRef: webhook, connection: alerts}
- {trigger: succeeded, hubRef: slack, connection: team-chat}
- hubRef: webhook
  connection: alerts
  conditions: "{{ status == 'succeeded' and outputs['loss'] < 0.5 }}"
"""


def test_a_failed_op_runs_its_failure_hook_with_the_runs_context(
    tmp_path: Path, receiver: Any
) -> None:
    url, handler = receiver
    path = _component(tmp_path, "import sys; print('boom', file=sys.stderr); sys.exit(3)", HOOKS)

    result = run(path, connections=_connections(tmp_path, url))

    assert result.status == "failed"
    [(where, body)] = handler.received
    assert where == "/alerts"
    assert (body["name"], body["status"], body["kind"]) == ("train", "failed", "job")
    assert body["uuid"] == result.uuid
    assert body["inputs"] == {"lr": 0.1}
    assert "exited with code 3" in body["condition"]["message"]
    assert body["text"].startswith("Polyaxon run `train` (job, uuid ")


def test_a_succeeded_op_runs_its_success_hooks_and_conditions_see_its_outputs(
    tmp_path: Path, receiver: Any
) -> None:
    url, handler = receiver
    command = "from polyaxon_prefect import tracking; tracking.log_outputs(loss=0.25)"
    path = _component(tmp_path, command, HOOKS)

    result = run(path, connections=_connections(tmp_path, url))

    assert result.status == "succeeded", result.message
    received = sorted(handler.received, key=lambda item: item[0])
    assert [where for where, _ in received] == ["/alerts", "/slack"]
    assert received[0][1]["outputs"] == {"loss": 0.25}
    assert set(received[1][1]) == {"text"}, "slack gets a message, not the raw fields"
    assert "succeeded; outputs: loss=0.25" in received[1][1]["text"]


def test_a_failing_notifier_never_changes_the_ops_state(tmp_path: Path, receiver: Any) -> None:
    url, handler = receiver
    handler.status = 500
    command = "from polyaxon_prefect import tracking; tracking.log_outputs(loss=1.0)"
    path = _component(tmp_path, command, "- {hubRef: slack, connection: team-chat}\n")

    result = run(path, connections=_connections(tmp_path, url))

    assert result.status == "succeeded", "the hook failed, the op did not"
    assert len(handler.received) == 1
