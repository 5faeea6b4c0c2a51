"""Deployed runs that a worker picks up, end to end, on a module server and worker of their own
(as `test_deployments.py` sets them up): a hook runs on failure and posts to a loopback HTTP
server; ``dependsOnPast`` skips the run after a failed one; a running DAG stopped with
``polyaxon-prefect stop`` ends Cancelled with no process left.

A file of its own (its runs take over a minute together): the parallel suite runs it beside
`test_deployments.py`, on another worker."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_deployments import Api, _cli, _component, _deploy, cluster
from tests.prefect.conftest import pid_alive

__all__ = ["cluster"]  # the module's server and worker, set up as test_deployments.py's

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]


class _Receiver(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_a_hook_runs_when_a_deployed_run_fails(
    cluster: tuple[dict[str, str], Api], tmp_path: Path
) -> None:
    env, api = cluster
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        connections = tmp_path / "connections.yaml"
        connections.write_text(
            "- {name: alerts, kind: webhook, schema: {url: "
            f"'http://127.0.0.1:{server.server_address[1]}/alerts'}}}}\n"
        )
        path = tmp_path / "fails.yaml"
        path.write_text(
            "version: 1.1\nkind: component\nname: fails\n"
            "hooks: [{trigger: failed, hubRef: webhook, connection: alerts}]\n"
            "run: {kind: job, container: {command: [python, -c, 'raise SystemExit(4)']}}\n"
        )
        variables = json.dumps({"env": {"POLYAXON_PREFECT_CONNECTIONS": str(connections)}})
        _deploy(env, path, "--job-variables", variables)
        run = api.wait_final(api.run_deployment("fails/fails"))
        assert run["state"]["type"] == "FAILED"
        deadline = time.monotonic() + 30
        while not _Receiver.received and time.monotonic() < deadline:
            time.sleep(0.5)
        [body] = _Receiver.received
        assert (body["name"], body["status"]) == ("fails", "failed")
        assert "exited with code 4" in body["condition"]["message"]
    finally:
        server.shutdown()


def test_depends_on_past_skips_the_run_after_a_failed_one(
    cluster: tuple[dict[str, str], Api], tmp_path: Path
) -> None:
    """``dependsOnPast``: one run at a time, and a run after a failed run ends skipped."""
    env, api = cluster
    schedule = "schedule: {kind: interval, frequency: 86400, dependsOnPast: true}\n"
    path = _component(tmp_path, "careful", schedule, command="raise SystemExit(2)")
    _deploy(env, path)
    deployment = api.deployment("careful/careful")
    assert deployment["global_concurrency_limit"]["limit"] == 1
    first = api.wait_final(api.run_deployment("careful/careful"))
    assert first["state"]["type"] == "FAILED"
    second = api.wait_final(api.run_deployment("careful/careful"))
    assert (second["state"]["type"], second["state"]["name"]) == ("COMPLETED", "Skipped")
    assert "dependsOnPast: the previous run" in second["state"]["message"]
    assert first["name"] in second["state"]["message"]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
def test_stop_ends_a_deployed_dag_that_a_worker_runs(
    cluster: tuple[dict[str, str], Api], tmp_path: Path
) -> None:
    """`polyaxon-prefect stop` of a run a worker started: its ops' processes end (checked by
    pid), and the run, its op task runs and `get` all say stopped. The worker's runner
    usually kills the process before its own watcher stops the DAG (Prefect's events reach
    the worker first); the session's reaper then ends what is left Cancelled, not Crashed."""
    env, api = cluster
    pids = tmp_path / "pids"
    pids.mkdir()
    sleeper = (
        "import os, pathlib, subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        f"pathlib.Path({str(pids)!r}, str(os.getpid())).write_text(str(child.pid)); "
        "time.sleep(300)"
    )
    job = {"kind": "job", "container": {"command": [sys.executable, "-c", sleeper]}}
    ops = [{"name": "a", "dagRef": "sleeper"}, {"name": "b", "dagRef": "sleeper"}]
    dag = {"kind": "dag", "operations": ops, "components": [{"name": "sleeper", "run": job}]}
    spec = {"version": 1.1, "kind": "component", "name": "stoppable", "run": dag}
    path = tmp_path / "stoppable.yaml"
    path.write_text(json.dumps(spec))
    _deploy(env, path)
    flow_run_id = api.run_deployment("stoppable/stoppable")
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    written = [n for p in pids.iterdir() for n in (int(p.name), int(p.read_text()))]
    assert len(written) == 4 and all(pid_alive(pid) for pid in written)

    stopped = _cli(env, "stop", flow_run_id)
    assert stopped.returncode == 0, stopped.stderr
    run = api.wait_final(flow_run_id, 30)

    assert run["state"]["type"] == "CANCELLED", run["state"]
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in written) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in written if pid_alive(pid)]
    assert set(api.task_runs(flow_run_id).values()) == {"Cancelled"}
    shown = json.loads(_cli(env, "get", flow_run_id, "--json").stdout)
    assert shown["status"] == "stopped"
