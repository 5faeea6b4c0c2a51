"""``kind: service`` on this machine: a real server process, reached over HTTP through the URL
the run announces, stopped at its timeout or when its DAG's other ops are done, with nothing
left running (its grandchild included)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.runtime._result import RunResult
from tests.prefect.conftest import pid_alive, wait_until

PY = sys.executable
SERVER = """\
import http.server, os, subprocess, sys
from pathlib import Path
child = subprocess.Popen(["sleep", "600"])  # a grandchild: stopped with the service's group
Path(sys.argv[2]).write_text(f"{os.getpid()} {child.pid}")
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()
"""
CLIENT = (
    "import sys, urllib.request; "
    "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _service(name: str, port: int, pids: Path, extra: str = "") -> str:
    return (
        f"kind: service\n    ports: [{port}]\n{extra}"
        f'    container: {{command: ["{PY}", server.py, "{{{{ globals.ports[0] }}}}", "{pids}"]}}\n'
    )


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def _in_thread(path: Path) -> tuple[threading.Thread, list[RunResult]]:
    results: list[RunResult] = []
    thread = threading.Thread(target=lambda: results.append(run(path)), daemon=True)
    thread.start()
    return thread, results


def _service_record(root: Path) -> dict[str, Any] | None:
    for found in root.rglob("service.json"):
        return dict(json.loads(found.read_text()))
    return None


def test_a_service_serves_at_its_url_and_stops_at_its_timeout(
    tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL is Polyaxon's base url on the chosen port (the server gets the full path),
    announced in service.json; the timeout stops the whole process group: ``stopped``."""
    root = tmp_path / "artifacts"
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(root))
    (tmp_path / "server.py").write_text(SERVER)
    pids = tmp_path / "pids"
    port = _free_port()
    path = tmp_path / "svc.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: hello\ntermination: {timeout: 4}\nrun:\n    "
        + _service("hello", port, pids)
    )
    thread, results = _in_thread(path)
    assert wait_until(lambda: (_service_record(root) or {}).get("status") == "running", 30)
    record = _service_record(root)
    assert record is not None
    url = record["url"]
    assert url == f"http://127.0.0.1:{port}{record['base_url']}/"
    assert record["base_url"].startswith("/services/v1/local/local/default/runs/")
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read().decode() == f"hello {record['base_url']}/"
    server_pid, grandchild = _pids(pids)
    thread.join(60)
    [result] = results
    assert result.status == "stopped", result.message
    assert "termination.timeout (4s)" in result.message
    assert not pid_alive(server_pid) and not pid_alive(grandchild)
    assert (_service_record(root) or {}).get("status") == "stopped"


def test_a_dags_service_serves_its_dependents_and_is_stopped_with_the_dag(
    tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The op that depends on the service starts once it serves and reaches it over HTTP; the
    service ends ``stopped`` when the other ops are done, the DAG ``succeeded``."""
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    (tmp_path / "server.py").write_text(SERVER)
    pids = tmp_path / "pids"
    port = _free_port()
    path = tmp_path / "dag.yaml"
    server = f'["{PY}", server.py, "{{{{ globals.ports[0] }}}}", "{pids}"]'
    path.write_text(
        "version: 1.1\nkind: component\nname: with-service\nrun:\n  kind: dag\n  operations:\n"
        "  - name: web\n    component:\n      run:\n"
        f"        {{kind: service, ports: [{port}], rewritePath: true, "
        f"container: {{command: {server}}}}}\n"
        "  - name: client\n    dependencies: [web]\n    component:\n      run:\n"
        f'        {{kind: job, container: {{command: ["{PY}", -c, "{CLIENT}", '
        f'"http://127.0.0.1:{port}/ping"]}}}}\n'
        "  - name: train\n    component:\n      run:\n"
        f'        {{kind: job, container: {{command: ["{PY}", -c, "print(1)"]}}}}\n'
    )
    result = run(path)
    assert result.status == "succeeded", result.message
    assert result.ops is not None
    assert {n: op["status"] for n, op in result.ops.items()} == {
        "web": "stopped",
        "client": "succeeded",
        "train": "succeeded",
    }
    assert "the other ops of dag `with-service` are done" in result.ops["web"]["message"]
    [client_run] = (tmp_path / "artifacts").rglob(result.ops["client"]["uuid"])
    assert "hello /ping" in "".join(p.read_text() for p in (client_run / "logs").iterdir())
    assert not any(pid_alive(pid) for pid in _pids(pids))


# a job's PATH starts with this interpreter's folder (CI does not activate the venv)
@pytest.mark.skipif(
    shutil.which("tensorboard", path=os.path.dirname(sys.executable)) is None
    and shutil.which("tensorboard") is None,
    reason="tensorboard is not installed",
)
def test_the_tensorboard_hub_component_serves_in_a_dag(
    tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built-in ``tensorboard`` component, as Polyaxon ships it (``--path_prefix`` is its
    base url), really serves its UI to the op that depends on it, then stops with the DAG."""
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    logdir = tmp_path / "events"
    logdir.mkdir()
    probe = (  # the URL the service recorded, as a user would open it
        "import json, os, pathlib, urllib.request; "
        "root = pathlib.Path(os.environ['POLYAXON_PREFECT_ARTIFACTS_ROOT']); "
        "url = json.loads(next(root.rglob('service.json')).read_text())['url']; "
        "body = urllib.request.urlopen(url, timeout=10).read().decode(); "
        "print(url, 'tensorboard' in body.lower())"
    )
    path = tmp_path / "tb.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: board\nrun:\n  kind: dag\n  operations:\n"
        "  - name: tb\n    hubRef: tensorboard\n"
        f"    params: {{path: {{value: '{logdir}'}}}}\n"
        "    runPatch: {init: []}\n"
        "  - name: look\n    dependencies: [tb]\n    component:\n      run:\n"
        f'        {{kind: job, container: {{command: ["{PY}", -c, "{probe}"]}}}}\n'
    )
    result = run(path)
    assert result.status == "succeeded", result.message
    assert result.ops is not None
    assert result.ops["tb"]["status"] == "stopped"
    [look] = (tmp_path / "artifacts").rglob(result.ops["look"]["uuid"])
    printed = "".join(p.read_text() for p in (look / "logs").iterdir())
    assert "/services/v1/local/local/default/runs/" in printed and "True" in printed


@pytest.mark.parametrize(("asked", "seen"), [(1, {"0", "1"}), (0, {""})])
def test_a_service_sees_exactly_the_gpus_it_asks_for(
    tmp_path: Path,
    prefect_server: str,
    monkeypatch: pytest.MonkeyPatch,
    asked: int,
    seen: set[str],
) -> None:
    """On a simulated 2-GPU machine a service (a notebook, a model server) is given one of
    the GPUs when it asks for one, held from the machine's pool while it serves, and none
    when it asks for none (it saw every GPU of the machine before)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("POLYAXON_PREFECT_GPU_LOCKS", str(tmp_path / "locks"))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    seen_file = tmp_path / "seen"
    (tmp_path / "server.py").write_text(
        "import http.server, os, sys\nfrom pathlib import Path\n"
        "Path(sys.argv[2]).write_text(os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))\n"
        "http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])),"
        " http.server.BaseHTTPRequestHandler).serve_forever()\n"
    )
    limits = f"resources: {{limits: {{nvidia.com/gpu: {asked}}}}}, " if asked else ""
    path = tmp_path / "svc.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: gpu-svc\ntermination: {timeout: 3}\n"
        f"run:\n  kind: service\n  ports: [{_free_port()}]\n"
        f'  container: {{{limits}command: ["{PY}", server.py, "{{{{ globals.ports[0] }}}}",'
        f' "{seen_file}"]}}\n'
    )
    result = run(path)
    assert result.status == "stopped", result.message
    assert seen_file.read_text() in seen
