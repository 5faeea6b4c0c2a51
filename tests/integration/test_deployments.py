"""Deployments end to end, with real processes on loopback: ``prefect server start``, a process
work pool and ``prefect worker start`` (each deployed run is a process the worker starts),
``polyaxon-prefect deploy`` (its ``cli.main``, in the test's process), ``prefect deployment run``
(the quick-start's; the other tests ask the API for a run as that command does).

The quick-start DAG deployed with its typed form runs with a ``--param`` and its op task runs
end as they should; a bad value is refused with a readable message and no flow run; a
deployment is named after its operation, updated by the same operation and refused to another
one unless ``--force``; a cron and an interval schedule show on their deployments; a
``datetime`` schedule fires. One server and one worker for the module.

The deployed runs that fail, are skipped or are stopped (a hook on failure, ``dependsOnPast``,
``polyaxon-prefect stop``) are in `test_deployments_runs.py`, on a server and worker of its own
set up by this module's `cluster`: the parallel suite runs the two files on two workers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import create_process_pool, prefect_server, stop
from tests.prefect.conftest import cli_in

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
    """A real server, a process work pool and a worker polling it every second (each module
    that uses it has its own)."""
    folder = Path(tempfile.mkdtemp(prefix="prefect-deploy-"))
    with prefect_server(folder, database=prefect_database_template) as env:
        create_process_pool(env["PREFECT_API_URL"], POOL)  # in this process: no CLI
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
