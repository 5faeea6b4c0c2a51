"""Trials as deployment runs on a work pool, end to end on loopback.

A real ``prefect server start`` (own ``PREFECT_HOME``), a process work pool, a deployment of
``flows/trial.py:flow``, a ``prefect worker start`` process, and a small sweep run with
``--deployment``: every trial must be its own flow run of that deployment, run by the worker.
One scenario only: the server, the worker and a Python process per trial take about a minute.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import create_process_pool, prefect_server, stop

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
POOL = "sweep-pool"


@pytest.fixture(scope="module")
def server_env(prefect_database_template: Path) -> Iterator[dict[str, str]]:
    folder = Path(tempfile.mkdtemp(prefix="prefect-pool-"))
    with prefect_server(folder, database=prefect_database_template) as env:
        yield env


DEPLOY = """\
from polyaxon_prefect.prefect import trial_flow
trial_flow.from_source(source={repo!r}, entrypoint="flows/trial.py:flow").deploy(
    name="sweep-trial", work_pool_name={pool!r}, print_next_steps=False
)
"""


def test_each_trial_is_a_deployment_run_picked_up_by_the_worker(
    server_env: dict[str, str], tmp_path: Path
):
    env = server_env
    prefect = str(BIN / "prefect")
    create_process_pool(env["PREFECT_API_URL"], POOL)  # in this process: no CLI process
    subprocess.run(
        [sys.executable, "-c", DEPLOY.format(repo=str(REPO), pool=POOL)],
        env=env,
        check=True,
        cwd=REPO,
    )
    worker = subprocess.Popen(
        [prefect, "worker", "start", "--pool", POOL, "--type", "process", "--limit", "4"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(
            "version: 1.1\nkind: operation\nname: pool-sweep\n"
            "matrix: {kind: grid, concurrency: 2, params: {x: {kind: choice, value: [1, 2, 3]}}}\n"
            "component:\n  name: pool-op\n  inputs: [{name: x, type: int}]\n"
            "  outputs: [{name: double, type: int}]\n"
            "  run: {kind: job, container: {command: [" + sys.executable + ", -c, "
            "'from polyaxon_prefect import tracking; "
            'tracking.log_outputs(double=2 * tracking.get_params()["x"])\']}}\n',
            encoding="utf-8",
        )
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "polyaxon_prefect.cli",
                "run",
                "-f",
                str(sweep),
                "--deployment",
                "polyaxon-trial/sweep-trial",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=480,
        )
    finally:
        stop(worker)  # how fast it stops is no concern of this test: what the trials did is
    assert completed.returncode == 0, completed.stdout[-3000:]
    payload = json.loads(completed.stdout)
    assert payload["status"] == "succeeded"
    assert [t["outputs"]["double"] for t in payload["trials"]] == [2, 4, 6]
    runs = _trial_runs(env, payload["flow_run_id"])
    assert len(runs) == 3
    assert all(r.deployment_id is not None and r.work_pool_name == POOL for r in runs)
    assert all(r.state.is_completed() for r in runs)
    assert sorted(r.name for r in runs) == ["trial-0 x=1", "trial-1 x=2", "trial-2 x=3"]


def _trial_runs(env: dict[str, str], parent: str) -> list[Any]:
    """The sweep's trial flow runs, read through Prefect's client in this process (a read, as
    a second process would make it: no process of ``import prefect`` for it)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    parents = FlowRunFilterParentFlowRunId(any_=[parent])
    with (
        temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}),
        get_client(sync_client=True) as client,
    ):
        return list(
            client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=parents))
        )
