"""``polyaxon-prefect stop``: a run started by another process is stopped through Prefect.

Real CLI processes on the session's Prefect server: one runs the Polyaxonfile, a second one
stops it by its flow run id. The jobs write their pid (and their grandchild's) to a folder, so
the test checks by pid that nothing of the run is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.prefect._states import polyaxon_status
from polyaxon_prefect.prefect.runs._stop_watch import POLL_ENV
from tests.prefect.conftest import MARK, pid_alive, run_processes, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")

PY = sys.executable
CLI = [PY, "-m", "polyaxon_prefect.cli"]
_MARKS: list[str] = []


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    yield
    while _MARKS:
        for pid in run_processes(_MARKS.pop()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _env(tmp_path: Path, api_url: str, mark: str) -> dict[str, str]:
    return {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "POLYAXON_PREFECT_RUNNER": "0",  # the run in the CLI's process (found by MARK)
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
        MARK: mark,
    }


def _warm(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a run that nothing looks for by its process (one that ends by itself): the
    server's warm runner takes it (no second ``import prefect``), with this environment."""
    return {k: v for k, v in env.items() if k != "POLYAXON_PREFECT_RUNNER"}


def _sleeper(pids: Path) -> str:
    """A job that starts a grandchild, writes both pids to ``pids``, then sleeps."""
    return (
        "import os, pathlib, subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        f"pathlib.Path({str(pids)!r}, str(os.getpid())).write_text(str(child.pid)); "
        "time.sleep(300)"
    )


def _job(name: str, pids: Path, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        **extra,
        "run": {"kind": "job", "container": {"command": [PY, "-c", _sleeper(pids)]}},
    }


def _write(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"version": 1.1, **spec}, sort_keys=False), encoding="utf-8")
    return path


def _written_pids(pids: Path) -> list[int]:
    found = []
    for entry in pids.iterdir():
        with contextlib.suppress(ValueError, OSError):
            found += [int(entry.name), int(entry.read_text())]
    return found


def _root_flow_run_id(name: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        FlowRunFilterParentTaskRunId,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                name=FlowRunFilterName(any_=[name]),
                parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=True),
            )
        )
    assert len(runs) == 1, runs
    return str(runs[0].id)


def _descendants(flow_run_id: str) -> list[Any]:
    """Every flow run under ``flow_run_id`` (a DAG op's subflow, a sweep's trials), any depth."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    found: list[Any] = []
    parents = [flow_run_id]
    with get_client(sync_client=True) as client:
        while parents:
            children = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=parents)
                )
            )
            found += children
            parents = [str(child.id) for child in children]
    return found


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def _start(path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    _MARKS.append(env[MARK])
    return subprocess.Popen(
        [*CLI, "run", "-f", str(path), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_stop_from_a_second_process_ends_a_dag_with_a_sweep_and_leaves_no_process(
    tmp_path: Path, prefect_server: str, api: Any
):
    pids = tmp_path / "pids"
    pids.mkdir()
    name = f"stop-dag-{uuid.uuid4().hex[:8]}"
    trial = _job("trial", pids, inputs=[{"name": "x", "type": "int"}])
    choice = {"kind": "choice", "value": [1, 2, 3]}
    sweep = {"kind": "grid", "concurrency": 2, "params": {"x": choice}}
    path = _write(
        tmp_path / "dag.yaml",
        {
            "kind": "component",
            "name": name,
            "run": {
                "kind": "dag",
                "operations": [
                    {"name": "long", "dagRef": "long"},
                    {"name": "sweep", "dagRef": "trial", "matrix": sweep},
                ],
                "components": [_job("long", pids), trial],
            },
        },
    )
    env = _env(tmp_path, prefect_server, uuid.uuid4().hex)
    cli = _start(path, env)
    assert wait_until(lambda: len(list(pids.iterdir())) >= 3, 90), cli.stderr
    flow_run_id = _root_flow_run_id(name)
    written = _written_pids(pids)
    assert len(written) == 6 and all(pid_alive(pid) for pid in written)

    trial_runs: list[Any] = []
    assert wait_until(
        lambda: (
            trial_runs.extend(c for c in _descendants(flow_run_id) if c.name.startswith("trial-"))
            or trial_runs
        ),
        20,
        0.5,
    )
    trial_run = trial_runs[0]
    refused = _cli(["stop", str(trial_run.id)], env)  # a trial alone: refused, the root named
    assert refused.returncode == 1
    assert f"stop that run (`polyaxon-prefect stop {flow_run_id}`)" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert all(pid_alive(pid) for pid in written)

    sent = time.monotonic()
    stop = _cli(["stop", flow_run_id], env)
    out, err = cli.communicate(timeout=30)
    elapsed = time.monotonic() - sent

    assert stop.returncode == 0, stop.stderr
    assert f"stopping run `{name}` ({flow_run_id})" in stop.stdout
    assert elapsed < 10, elapsed
    assert cli.returncode == 1, err
    assert "Traceback" not in err
    assert not [pid for pid in written if pid_alive(pid)]
    assert len(list(pids.iterdir())) == 3  # the third trial never started
    payload = json.loads(out)
    assert payload["status"] == "stopped"
    assert {op["status"] for op in payload["ops"].values()} == {"stopped"}
    assert api.flow_run(flow_run_id).state.type == StateType.CANCELLED

    shown = json.loads(_cli(["get", flow_run_id, "--json"], env).stdout)
    assert shown["status"] == "stopped"
    assert {op["status"] for op in shown["ops"].values()} == {"stopped"}
    not_final = [t.name for t in api.task_runs(flow_run_id) if not t.state.is_final()]
    assert not not_final
    children = _descendants(flow_run_id)
    assert len(children) >= 3  # the sweep op's subflow and its two trials
    assert {c.state.type for c in children} == {StateType.CANCELLED}, children
    trials = [c for c in children if c.name.startswith("trial-")]
    assert [polyaxon_status(t.state) for t in trials] == ["stopped", "stopped"]
    assert wait_until(lambda: not run_processes(env[MARK]), 10), run_processes(env[MARK])


def _first_start_sleeps(pids: Path, starts: Path) -> str:
    """Counts its starts in ``starts``; the first one does what `_sleeper` does, later ones
    end at once (so a re-run that executes succeeds)."""
    return (
        "import pathlib; "
        f"starts = pathlib.Path({str(starts)!r}); "
        "n = len(starts.read_text()) if starts.exists() else 0; "
        "starts.write_text('x' * (n + 1)); "
        f"exec({_sleeper(pids)!r}) if n == 0 else None"
    )


def test_stop_ends_a_plain_job_that_a_rerun_then_executes_again(
    tmp_path: Path, prefect_server: str, api: Any
):
    pids, starts = tmp_path / "pids", tmp_path / "starts"
    pids.mkdir()
    name = f"stop-job-{uuid.uuid4().hex[:8]}"
    command = [PY, "-c", _first_start_sleeps(pids, starts)]
    spec = {
        "kind": "component",
        "name": name,
        "cache": {"disable": False},
        "run": {"kind": "job", "container": {"command": command}},
    }
    path = _write(tmp_path / "job.yaml", spec)
    env = _env(tmp_path, prefect_server, uuid.uuid4().hex)
    cli = _start(path, env)
    assert wait_until(lambda: any(pids.iterdir()), 90), cli.stderr
    flow_run_id = _root_flow_run_id(name)
    written = _written_pids(pids)

    stop = _cli(["stop", flow_run_id, "--json"], env)
    out, err = cli.communicate(timeout=30)

    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout) == {
        "id": flow_run_id,
        "name": name,
        "status": "stopping",
        "stopping": True,
    }
    assert json.loads(out)["status"] == "stopped", err
    assert not [pid for pid in written if pid_alive(pid)]
    assert api.flow_run(flow_run_id).state.type == StateType.CANCELLED

    again = _cli(["stop", flow_run_id], env)

    assert again.returncode == 0, again.stderr
    assert (
        again.stdout.strip() == f"run `{name}` ({flow_run_id}) is already stopped: nothing to stop"
    )

    rerun = _cli(["run", "-f", str(path), "--json"], _warm(env))  # same file, same cache key

    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["status"] == "succeeded"
    assert json.loads(rerun.stdout)["cached"] is False
    assert starts.read_text() == "xx"  # the stopped job was executed again, not replayed


def test_stop_of_a_finished_run_changes_nothing(tmp_path: Path, prefect_server: str, api: Any):
    name = f"stop-done-{uuid.uuid4().hex[:8]}"
    job = {"kind": "job", "container": {"command": [PY, "-c", "pass"]}}
    spec = {"kind": "component", "name": name, "run": job}
    path = _write(tmp_path / "done.yaml", spec)
    env = _env(tmp_path, prefect_server, uuid.uuid4().hex)
    done = _cli(["run", "-f", str(path), "--json"], _warm(env))
    flow_run_id = json.loads(done.stdout)["flow_run_id"]

    stop = _cli(["stop", flow_run_id, "--json"], env)

    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["status"] == "succeeded"
    assert json.loads(stop.stdout)["stopping"] is False
    assert api.flow_run(flow_run_id).state.type == StateType.COMPLETED


def test_stop_of_an_unknown_run_is_one_error_line(tmp_path: Path, prefect_server: str):
    env = _env(tmp_path, prefect_server, uuid.uuid4().hex)

    stop = _cli(["stop", "no-such-run", "--json"], env)

    assert stop.returncode == 1
    assert "Traceback" not in stop.stderr
    assert "no run with the id, name or uuid `no-such-run`" in json.loads(stop.stdout)["error"]


def test_a_stop_that_comes_as_the_run_ends_leaves_it_cancelled_not_cancelling(
    tmp_path: Path, prefect_server: str, api: Any
):
    """The job sets its own flow run Cancelling and exits 0 at once, long before the watcher's
    next read: the read at the run's end sees it, and the run ends Cancelled (the server takes
    no other state after Cancelling), never stuck in Cancelling."""
    name = f"stop-late-{uuid.uuid4().hex[:8]}"
    code = (
        "from prefect.client.orchestration import get_client; "
        "from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName; "
        "from prefect.states import Cancelling; "
        "c = get_client(sync_client=True).__enter__(); "
        f"named = FlowRunFilter(name=FlowRunFilterName(any_=[{name!r}])); "
        "[r] = c.read_flow_runs(flow_run_filter=named); "
        "c.set_flow_run_state(r.id, Cancelling())"
    )
    job = {"kind": "job", "container": {"command": [PY, "-c", code]}}
    path = _write(tmp_path / "late.yaml", {"kind": "component", "name": name, "run": job})
    env = _env(tmp_path, prefect_server, uuid.uuid4().hex) | {POLL_ENV: "600"}

    done = _cli(["run", "-f", str(path), "--json"], _warm(env))

    flow_run_id = json.loads(done.stdout)["flow_run_id"]
    state = api.flow_run(flow_run_id).state
    assert state.type == StateType.CANCELLED, done.stderr
    assert state.message == "stopped by `polyaxon-prefect stop` as it ended"
