"""Deployments end to end, with real processes on loopback: ``prefect server start``, a process
work pool and ``prefect worker start`` (each deployed run is a process the worker starts),
``polyaxon-prefect deploy`` (its ``cli.main``, in the test's process), ``prefect deployment run``
(the quick-start's; the other tests ask the API for a run as that command does).

The quick-start DAG deployed with its typed form runs with a ``--param`` and its op task runs
end as they should; a bad value is refused with a readable message and no flow run; a
deployment is named after its operation, updated by the same operation and refused to another
one unless ``--force``; a cron and an interval schedule show on their deployments; a
``datetime`` schedule fires; a hook runs on failure and posts to a loopback HTTP server; a
running DAG stopped with ``polyaxon-prefect stop`` ends Cancelled with no process left. One
server and one worker for the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import prefect_server, stop
from tests.prefect.conftest import cli_in, pid_alive

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
POOL = "deploy-pool"


class Api:
    """The server's REST API, read the way the UI reads it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def deployment(self, full_name: str) -> Any:
        return self.call(f"/deployments/name/{full_name}")

    def runs_of(self, deployment_id: str) -> list[Any]:
        body = {"deployments": {"id": {"any_": [deployment_id]}}}
        return list(self.call("/flow_runs/filter", body))

    def wait_final(self, flow_run_id: str, seconds: float = 120) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            run = self.call(f"/flow_runs/{flow_run_id}")
            if run["state"] and run["state"]["type"] in (
                "COMPLETED",
                "FAILED",
                "CRASHED",
                "CANCELLED",
            ):
                return run
            time.sleep(1)
        raise AssertionError(f"flow run {flow_run_id} did not end in {seconds:.0f}s")

    def run_deployment(self, full_name: str) -> str:
        """A flow run of the deployment with its defaults, asked for as ``prefect deployment
        run`` asks (Prefect's client, its retries of a busy server's 503 included; the worker
        picks it up the same way), without a process of its own: its id."""
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with (
            temporary_settings(updates={PREFECT_API_URL: self.url}),
            get_client(sync_client=True) as client,
        ):
            deployment = client.read_deployment_by_name(full_name)
            return str(client.create_flow_run_from_deployment(deployment.id).id)

    def task_runs(self, flow_run_id: str) -> dict[str, str]:
        body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
        return {t["name"]: t["state"]["name"] for t in self.call("/task_runs/filter", body)}


@pytest.fixture(scope="module")
def cluster(prefect_database_template: Path) -> Iterator[tuple[dict[str, str], Api]]:
    """A real server, a process work pool and a worker polling it every second."""
    folder = Path(tempfile.mkdtemp(prefix="prefect-deploy-"))
    with prefect_server(folder, database=prefect_database_template) as env:
        subprocess.run(
            [str(BIN / "prefect"), "work-pool", "create", POOL, "--type", "process"],
            env=env,
            check=True,
            capture_output=True,
        )
        worker = subprocess.Popen(
            [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type", "process"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            yield env, Api(env["PREFECT_API_URL"])
        finally:
            stop(worker)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``polyaxon-prefect ARGS`` in this process (``cli.main``) on the module's server: what it
    printed and its exit code. A deploy or a stop is a few API calls; a second process would
    only add its seconds of ``import prefect`` (the runs themselves are the worker's
    processes)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    # Prefect's settings in force here name the module's server, as the CLI's would
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return cli_in(env["PREFECT_API_URL"], *args)


def _deploying(env: dict[str, str], file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli(env, "deploy", "-f", str(file), "--pool", POOL, *extra)


def _deploy(env: dict[str, str], file: Path, *extra: str) -> str:
    done = _deploying(env, file, *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _run(env: dict[str, str], name: str, *params: str) -> subprocess.CompletedProcess[str]:
    args = [arg for param in params for arg in ("--param", param)]
    return subprocess.run(
        [str(BIN / "prefect"), "deployment", "run", name, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _flow_run_id(output: str) -> str:
    for line in output.splitlines():
        if "UUID:" in line:
            return line.split("UUID:", 1)[1].strip()
    raise AssertionError(f"no flow run id in {output!r}")


def test_the_quick_start_dag_deploys_with_a_typed_form_and_runs(
    cluster: tuple[dict[str, str], Api],
) -> None:
    env, api = cluster
    out = _deploy(env, REPO / "examples/quick-start/dag.yaml", "--name", "qs", "-P", "top=3")
    assert "created deployment automated-process/qs" in out

    deployment = api.deployment("automated-process/qs")
    schema = deployment["parameter_openapi_schema"]["properties"]
    assert schema["max_loss"]["description"] == "max loss to start a tuning job."
    assert schema["max_loss"]["default"] == 0.01
    assert schema["top"]["description"] == "top jobs."
    assert deployment["parameters"] == {"top": 3}, "-P values are the form's defaults"
    assert deployment["enforce_parameter_schema"] is True

    done = _run(env, "automated-process/qs", "max_loss=10")
    assert done.returncode == 0, done.stderr
    run = api.wait_final(_flow_run_id(done.stdout))
    assert run["state"]["type"] == "COMPLETED", run["state"]
    assert api.task_runs(run["id"]) == {
        "experiment": "Completed",
        "tune": "Skipped",
        "best_model": "Completed",
    }

    runs_before = len(api.runs_of(deployment["id"]))
    bad = _run(env, "automated-process/qs", "max_loss=not-a-number")
    assert bad.returncode != 0
    text = bad.stdout + bad.stderr
    assert "max_loss" in text and "Traceback" not in text
    assert len(api.runs_of(deployment["id"])) == runs_before, "no flow run for a bad value"


def _component(folder: Path, name: str, schedule: str, command: str = "pass") -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        f"version: 1.1\nkind: operation\nname: {name}\n{schedule}"
        f"component:\n  name: {name}\n  run:\n    kind: job\n"
        f'    container: {{command: [python, -c, "{command}"]}}\n'
    )
    return path


def test_cron_and_interval_schedules_show_on_their_deployments(
    cluster: tuple[dict[str, str], Api], tmp_path: Path
) -> None:
    env, api = cluster
    cron = _component(tmp_path, "nightly", "schedule: {kind: cron, cron: '0 2 * * *'}\n")
    every = _component(tmp_path, "hourly", "schedule: {kind: interval, frequency: 3600}\n")
    _deploy(env, cron)
    _deploy(env, every)
    [nightly] = api.deployment("nightly/nightly")["schedules"]
    assert nightly["schedule"]["cron"] == "0 2 * * *"
    [hourly] = api.deployment("hourly/hourly")["schedules"]
    assert hourly["schedule"]["interval"] == 3600


def test_a_datetime_schedule_fires(cluster: tuple[dict[str, str], Api], tmp_path: Path) -> None:
    env, api = cluster
    at = (datetime.now(UTC) + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    once = _component(tmp_path, "once", f"schedule: {{kind: datetime, startAt: '{at}'}}\n")
    out = _deploy(env, once)
    assert "one run scheduled at" in out
    assert "updated deployment once/once" in _deploy(env, once), "deployed again: still one run"
    deployment = api.deployment("once/once")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        runs = api.runs_of(deployment["id"])
        if runs and runs[0]["state"]["type"] == "COMPLETED":
            break
        time.sleep(1)
    else:
        raise AssertionError(f"the datetime run did not complete: {runs}")
    assert len(runs) == 1, runs
    started = datetime.fromisoformat(runs[0]["start_time"].replace("Z", "+00:00"))
    assert started >= datetime.fromisoformat(at.replace("Z", "+00:00"))


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


def test_a_missing_pool_is_one_clear_line(cluster: tuple[dict[str, str], Api]) -> None:
    env, _ = cluster
    done = _cli(
        env, "deploy", "-f", str(REPO / "examples/quick-start/typed.yaml"), "--pool", "no-such-pool"
    )
    assert done.returncode == 1
    assert "work pool `no-such-pool` does not exist" in done.stderr
    assert "prefect work-pool create no-such-pool" in done.stderr
    assert "Traceback" not in done.stderr


def _report(folder: Path, operation: str, cron: str) -> Path:
    """An operation of the component ``report`` (one input, ``who``), on a cron schedule."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.yaml"
    path.write_text(
        f"version: 1.1\nkind: operation\nname: {operation}\n"
        f"schedule: {{kind: cron, cron: '{cron}'}}\n"
        "component:\n  name: report\n  inputs: [{name: who, type: str, value: nobody}]\n"
        "  run: {kind: job, container: {command: [python, -c, pass]}}\n"
    )
    return path


def _shape(deployment: Any) -> tuple[str, str, Any, str]:
    """What another operation must not change: id, cron, defaults, and the file it runs."""
    [schedule] = deployment["schedules"]
    file = deployment["job_variables"]["env"]["POLYAXON_PREFECT_FILE"]
    return deployment["id"], schedule["schedule"]["cron"], deployment["parameters"], file


def test_a_deployment_is_its_operations_another_takes_its_name_only_with_force(
    cluster: tuple[dict[str, str], Api], tmp_path: Path
) -> None:
    env, api = cluster
    mine = _report(tmp_path / "mine", "daily-report", "0 3 1 1 *")
    out = _deploy(env, mine, "-P", "who=alice")
    assert "created deployment report/daily-report" in out, "named after the operation"
    first = api.deployment("report/daily-report")

    out = _deploy(env, mine, "-P", "who=bob")
    assert "updated deployment report/daily-report" in out
    kept = api.deployment("report/daily-report")
    assert _shape(kept) == (first["id"], "0 3 1 1 *", {"who": "bob"}, str(mine))

    weekly = _report(tmp_path / "weekly", "weekly-report", "0 4 1 1 *")
    assert "created deployment report/weekly-report" in _deploy(env, weekly)
    assert api.deployment("report/daily-report")["id"] == first["id"], "each op its own"

    theirs = _report(tmp_path / "theirs", "daily-report", "0 5 1 1 *")
    for refused in (
        _deploying(env, theirs, "-P", "who=eve"),
        _deploying(env, weekly, "--name", "daily-report"),
    ):
        assert refused.returncode == 1
        [line] = refused.stderr.strip().splitlines()
        assert "deployment `report/daily-report` already runs operation `daily-report`" in line
        assert str(mine) in line and "--name NEW" in line and "--force" in line
        assert _shape(api.deployment("report/daily-report")) == _shape(kept), "nothing changed"

    out = _deploy(env, theirs, "-P", "who=eve", "--force")
    assert "replaced deployment report/daily-report" in out
    assert f"operation `daily-report` of {mine}" in out
    replaced = api.deployment("report/daily-report")
    assert _shape(replaced) == (first["id"], "0 5 1 1 *", {"who": "eve"}, str(theirs))
    assert _deploying(env, mine).returncode == 1, "now it is theirs"


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
