"""One mapping from Prefect states to Polyaxon statuses, read back by ``ls``/``get`` from runs
really in each state on the session's Prefect server: a job that is running, a deployment's
scheduled run, a late one, a pending one, a crashed one, one being cancelled, a paused one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.objects import StateType
from prefect.states import (
    Cancelling,
    Crashed,
    Late,
    Paused,
    Pending,
    Scheduled,
    State,
)

from polyaxon_prefect.prefect._states import STATE_TYPES, polyaxon_status
from polyaxon_prefect.prefect.runs._runs import get_run, list_runs
from polyaxon_prefect.specs import Status
from tests.prefect.conftest import read_flow_run

BIN = Path(sys.executable).parent


def test_every_state_type_has_a_status_and_only_failures_read_failed() -> None:
    for state_type in StateType:
        status = polyaxon_status(State(type=state_type))
        assert status in set(Status)
        assert (status == Status.FAILED) == (state_type in (StateType.FAILED, StateType.CRASHED))
    assert polyaxon_status(Late()) == Status.SCHEDULED
    assert polyaxon_status(State(type=StateType.SCHEDULED, name="AwaitingRetry")) == "retrying"
    for status, types in STATE_TYPES.items():  # the filter finds every state of the status
        for state_type in StateType:
            if polyaxon_status(State(type=state_type)) == status:
                assert state_type.value in types


def _cli(api: str, *args: str, **kwargs: Any) -> Any:
    env = {**os.environ, "PREFECT_API_URL": api}
    return subprocess.run(
        [str(BIN / "polyaxon-prefect"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        **kwargs,
    )


@pytest.fixture
def deployment_id(prefect_server: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name("nightly-train")
        return client.create_deployment(flow_id=flow_id, name="cron")


def _run_in(deployment_id: Any, state: State, name: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(
            deployment_id, name=name, state=Scheduled(scheduled_time=_later())
        )
        if state.type != StateType.SCHEDULED or state.name != "Scheduled":
            client.set_flow_run_state(run.id, state, force=True)
        return str(run.id)


def _later() -> Any:
    from prefect.types._datetime import now

    return now("UTC") + timedelta(hours=1)


@pytest.mark.parametrize(
    ("name", "state", "status"),
    [
        ("a-scheduled-run", Scheduled(scheduled_time=None), "scheduled"),
        ("a-late-run", Late(), "scheduled"),
        ("a-pending-run", Pending(), "queued"),
        ("a-crashed-run", Crashed(message="the pod was evicted"), "failed"),
        ("a-cancelling-run", Cancelling(), "stopping"),
        ("a-paused-run", Paused(), "paused"),
    ],
)
def test_ls_and_get_read_each_state(
    prefect_server: str, deployment_id: Any, name: str, state: State, status: str
) -> None:
    if state.type == StateType.SCHEDULED and state.name == "Scheduled":
        state = Scheduled(scheduled_time=_later())
    run_id = _run_in(deployment_id, state, name)
    if state.type == StateType.CANCELLING:
        # A run with no infrastructure to stop is settled Cancelled by the server at once:
        # read it back while it is Cancelling if we can, and as stopped once it is not.
        held = read_flow_run(run_id).state
        status = "stopping" if held.type == StateType.CANCELLING else "stopped"
    assert get_run(prefect_server, run_id)["status"] == status
    listed = {row["id"]: row["status"] for row in list_runs(prefect_server, status=status)}
    assert listed.get(run_id) == status
    others = [s for s in ("failed", "running", "succeeded") if s != status]
    for other in others:
        assert run_id not in {row["id"] for row in list_runs(prefect_server, status=other)}


def test_a_running_job_is_running_then_succeeded(prefect_server: str, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    job = tmp_path / "waiter.yaml"
    script = tmp_path / "wait_for_gate.py"
    script.write_text(
        f"import os, time\nwhile not os.path.exists({str(gate)!r}):\n    time.sleep(0.1)\n"
    )
    job.write_text(
        "version: 1.1\nkind: component\nname: status-waiter\nrun:\n  kind: job\n"
        f"  container: {{command: [python, {json.dumps(str(script))}]}}\n"
    )
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(job), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        running: list[dict[str, Any]] = []
        # the kind label is written beside the run's start (in the background, so the job
        # does not wait on the API): under load `running` can be read a moment before it
        while time.monotonic() < deadline and not (running and running[0]["kind"] != "-"):
            rows = list_runs(prefect_server, status="running")
            running = [row for row in rows if row["name"] == "status-waiter"]
            time.sleep(0.5)
        assert running, "the job never read back as running"
        assert running[0]["kind"] == "job", "its kind while it runs, before any report"
        shown = _cli(prefect_server, "ls", "--status", "running")
        assert shown.returncode == 0 and "status-waiter" in shown.stdout
        assert re.search(r"^status-waiter +job +running", shown.stdout, re.M), shown.stdout
        assert "running" in shown.stdout and "failed" not in shown.stdout
        run_id = running[0]["id"]
        assert get_run(prefect_server, run_id)["status"] == "running"
        assert running[0]["duration"].endswith("s so far")  # not a 0 or a blank while it runs
    finally:
        gate.touch()
        out, _ = process.communicate(timeout=120)
    assert json.loads(out)["status"] == "succeeded"
    assert get_run(prefect_server, run_id)["status"] == "succeeded"


def test_ls_refuses_a_status_that_is_not_polyaxons(prefect_server: str) -> None:
    result = _cli(prefect_server, "ls", "--status", "bogus")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr and "Traceback" not in result.stderr
