"""``logs`` and ``statuses`` read a run back from another process: a finished 1 master + 2
worker run's lines with each replica's prefix, from Prefect's logs API and, once the server no
longer has the run, from the files the run kept; ``logs -f`` and ``statuses -w`` on a job that
is running, each in its own process, until it ends. (A test's first read is another process;
its further reads run in this one: the same reading code, without seconds of imports each.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.runtime._result import RunResult
from tests.prefect.conftest import cli_in, wait_until

PY = sys.executable
REPLICAS = ("master-0", "worker-0", "worker-1")


def _cli(api: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PREFECT_API_URL": api},
        timeout=timeout,
        check=False,
    )


SECRET = "s3cr3t-R3PLICA-777"
ECHO = (
    "import os; from polyaxon_prefect import tracking; rank = int(os.environ['RANK']); "
    "print('echo 2 from rank', rank, 'token', os.environ['API_TOKEN'], flush=True); "
    "tracking.log_outputs(loss=2.0 * (rank + 1))"
)


@pytest.fixture(scope="module")
def replica_run(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> RunResult:
    """A pytorchjob of a master and two workers, each printing its rank and a connection's
    secret (which must show as ``***`` everywhere), run to its end."""
    from prefect.logging.handlers import APILogWorker

    from polyaxon_prefect.runtime import Connection

    folder = tmp_path_factory.mktemp("logs")
    (folder / "secrets").mkdir()
    (folder / "secrets" / "creds.env").write_text(f"API_TOKEN={SECRET}\n", encoding="utf-8")
    connection = Connection.model_validate(
        {"name": "api", "kind": "http", "schema": {"url": "https://x"}, "secret": {"name": "creds"}}
    )
    command = json.dumps([PY, "-c", ECHO])
    replica = "{replicas: %d, connections: [api], container: {command: %s}}"
    path = folder / "ddp.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: logs-ddp\n"
        "outputs: [{name: loss, type: float}]\n"
        "run:\n  kind: pytorchjob\n"
        f"  master: {replica % (1, command)}\n"
        f"  worker: {replica % (2, command)}\n",
        encoding="utf-8",
    )
    os.environ["POLYAXON_PREFECT_SECRETS_DIR"] = str(folder / "secrets")
    try:
        result = run(path, connections={"api": connection})
    finally:
        del os.environ["POLYAXON_PREFECT_SECRETS_DIR"]
    assert result.status == "succeeded", result.message
    APILogWorker.drain_all(timeout=10)  # this process's lines are all on the server
    return result


def _expected(replica: str) -> str:
    rank = REPLICAS.index(replica)
    return f"[{replica}] echo 2 from rank {rank} token ***"


def test_logs_of_a_finished_replica_run_have_each_replicas_lines_with_its_prefix(
    replica_run: RunResult, prefect_server: str
):
    shown = _cli(prefect_server, "logs", str(replica_run.flow_run_id))

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    for replica in REPLICAS:
        assert _expected(replica) in lines, (replica, shown.stdout)
    assert "from the files" not in shown.stderr  # read from the API
    assert SECRET not in shown.stdout

    one = cli_in(prefect_server, "logs", replica_run.uuid or "", "--replica", "worker-1")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines() == ["echo 2 from rank 2 token ***"]

    files = cli_in(prefect_server, "logs", str(replica_run.flow_run_id), "--files", "--tail", "1")
    assert files.stdout.splitlines() == [_expected("worker-1")]  # the files, last one by name
    assert "--files: the lines below are from the files" in files.stderr

    last = cli_in(prefect_server, "logs", str(replica_run.flow_run_id), "--tail", "2", "--json")
    records = [json.loads(line) for line in last.stdout.splitlines()]
    assert len(records) == 2
    assert all(set(r) == {"timestamp", "level", "op", "replica", "message"} for r in records)


def test_each_replica_keeps_its_own_log_file(replica_run: RunResult):
    logs = Path(replica_run.artifacts_path or "", "logs")
    for rank, replica in enumerate(REPLICAS):
        text = (logs / f"{replica}.log").read_text(encoding="utf-8")
        assert text.splitlines() == [f"echo 2 from rank {rank} token ***"]


def test_logs_come_from_the_run_files_once_the_server_no_longer_has_the_run(
    replica_run: RunResult, prefect_server: str
):
    """The run deleted from the server (its logs go with it), as a reset database leaves it:
    the uuid still names the run's directory, whose files have every replica's lines."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.delete_flow_run(replica_run.flow_run_id)
    assert cli_in(prefect_server, "get", str(replica_run.flow_run_id)).returncode == 1

    shown = cli_in(prefect_server, "logs", replica_run.uuid or "")

    assert shown.returncode == 0, shown.stderr
    assert sorted(shown.stdout.splitlines()) == sorted(_expected(r) for r in REPLICAS)
    notes = shown.stderr.strip().splitlines()
    assert len(notes) == 1 and "from the files" in notes[0], shown.stderr
    missing = cli_in(prefect_server, "logs", uuid.uuid4().hex, "--json")
    assert missing.returncode == 1
    assert "no run" in json.loads(missing.stdout)["error"]


@pytest.mark.slow
def test_logs_come_from_the_run_files_on_a_new_empty_server(
    replica_run: RunResult, tmp_path: Path, prefect_database_template: Path
):
    """A second Prefect server with a database of its own (as after a reset): it knows no run,
    the uuid still names the run's directory. (Its database starts as a copy of the session's
    migrated empty one: the same empty server, without a migration of its own.)"""
    from tests.integration.conftest import prefect_server as new_server

    with new_server(tmp_path, database=prefect_database_template) as env:
        shown = _cli(
            env["PREFECT_API_URL"], "logs", replica_run.uuid or "", "--replica", "master-0"
        )

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["echo 2 from rank 0 token ***"]
    assert "does not know run" in shown.stderr and "from the files" in shown.stderr


def _start(api: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "polyaxon_prefect.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PREFECT_API_URL": api},
    )


def _flow_run_named(name: str, timeout: float) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            found = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name]))
            )
            if found:
                return found[0]
            time.sleep(0.1)
    raise AssertionError(f"no flow run named {name} in {timeout}s")


def _timed_lines(process: subprocess.Popen[str]) -> list[tuple[float, str]]:
    """Each stdout line of ``process`` with when it was read, until it exits (in a thread)."""
    got: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            got.append((time.monotonic(), line.rstrip("\n")))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return got


def test_follow_shows_lines_as_they_come_and_watching_sees_running_then_succeeded(
    tmp_path: Path, prefect_server: str
):
    """The job says it is waiting, and ticks only once `logs -f` (started while it runs) has
    shown that line: each tick then reaches `logs -f` while the job still runs."""
    name = f"follow-{uuid.uuid4().hex[:8]}"
    go = tmp_path / "go"
    body = (
        "import os, time\n"
        "print('waiting', flush=True)\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
        "for i in range(4):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.5)\n"
    )
    (tmp_path / "tick.py").write_text(body, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        f"version: 1.1\nkind: component\nname: {name}\n"
        f"run: {{kind: job, container: {{command: [{PY}, {tmp_path / 'tick.py'}]}}}}\n",
        encoding="utf-8",
    )
    job = _start(prefect_server, "run", "-f", str(tmp_path / "job.yaml"))
    follow = watch = get = None
    try:
        flow_run = _flow_run_named(name, 60)
        follow = _start(prefect_server, "logs", str(flow_run.id), "-f")
        watch = _start(prefect_server, "statuses", str(flow_run.id), "-w")
        get = _start(prefect_server, "get", str(flow_run.id), "-w", "--json")
        got = _timed_lines(follow)
        assert wait_until(lambda: any(line == "waiting" for _, line in got), 60), got
        go.touch()
        assert job.wait(timeout=120) == 0
        job_ended = time.monotonic()
        assert follow.wait(timeout=60) == 0, follow.stderr.read() if follow.stderr else ""
        watched, errors = watch.communicate(timeout=60)
        got_run, got_changes = get.communicate(timeout=60)
    finally:
        go.touch()
        for process in (job, follow, watch, get):
            if process is not None and process.poll() is None:
                process.kill()
    assert watch.returncode == 0, errors
    ticks = [(at, line) for at, line in got if line.startswith("tick ")]
    assert [line for _, line in ticks] == [f"tick {i}" for i in range(4)]
    assert ticks[0][0] < job_ended - 1.0, "the first tick came only after the job ended"
    statuses = [line.split()[2] for line in watched.splitlines()]
    assert "running" in statuses and statuses[-1] == "succeeded", watched
    assert statuses.index("running") < statuses.index("succeeded")
    assert get.returncode == 0, got_changes
    assert json.loads(got_run)["status"] == "succeeded"  # stdout: the run as it ended
    assert [line.split()[2] for line in got_changes.splitlines()][-1] == "succeeded"


LEAF = (
    "version: 1.1\nkind: component\nname: leaf\n"
    "inputs: [{name: x, type: float, value: 0.5, isOptional: true}]\n"
    f"run: {{kind: job, container: {{command: [{PY}, -c, "
    "\"from polyaxon_prefect import tracking; print('hello', tracking.get_params()['x'])\"]}}\n"
)
INNER = (
    "version: 1.1\nkind: component\nname: inner\nrun:\n  kind: dag\n  operations:\n"
    "  - {name: a, pathRef: leaf.yaml, params: {x: {value: 0.4}}}\n"
)
PIPE = (
    "version: 1.1\nkind: component\nname: logs-pipe\nrun:\n  kind: dag\n  operations:\n"
    "  - {name: first, pathRef: leaf.yaml, params: {x: {value: 0.1}}}\n"
    "  - {name: nested, pathRef: inner.yaml, dependencies: [first]}\n"
    "  - name: tune\n    pathRef: leaf.yaml\n"
    "    matrix: {kind: mapping, values: [{x: 0.2}, {x: 0.3}]}\n"
)


def _pipe(folder: Path, *, to_api: bool) -> RunResult:
    """The DAG ``logs-pipe`` (a job op, a nested DAG op, a sweep op of two trials), run with
    its lines sent to the API or not (as with ``PREFECT_LOGGING_TO_API_ENABLED=false``)."""
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    for name, text in {"leaf.yaml": LEAF, "inner.yaml": INNER, "pipe.yaml": PIPE}.items():
        (folder / name).write_text(text, encoding="utf-8")
    with temporary_settings(updates={PREFECT_LOGGING_TO_API_ENABLED: to_api}):
        result = run(folder / "pipe.yaml", cache=False)
    assert result.status == "succeeded", result.message
    APILogWorker.drain_all(timeout=10)
    return result


def test_a_dags_lines_name_their_op_and_op_selects_one(tmp_path: Path, prefect_server: str):
    result = _pipe(tmp_path, to_api=True)

    shown = _cli(prefect_server, "logs", str(result.flow_run_id))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    for line in ("[first] hello 0.1", "[nested/a] hello 0.4"):
        assert line in lines, shown.stdout
    trials = sorted(line for line in lines if line.startswith("[tune/trial-"))
    assert trials == ["[tune/trial-0] hello 0.2", "[tune/trial-1] hello 0.3"]

    nested = cli_in(prefect_server, "logs", str(result.flow_run_id), "--op", "nested")
    assert "[nested/a] hello 0.4" in nested.stdout.splitlines()
    assert all(line.startswith("[nested") for line in nested.stdout.splitlines()), nested.stdout
    one = cli_in(prefect_server, "logs", str(result.flow_run_id), "--op", "tune/trial-1")
    assert one.stdout.splitlines() == ["[tune/trial-1] hello 0.3"]


def test_a_dags_lines_come_from_its_ops_files_when_the_server_has_no_logs(
    tmp_path: Path, prefect_server: str
):
    result = _pipe(tmp_path, to_api=False)

    shown = cli_in(prefect_server, "logs", str(result.flow_run_id))

    expected = [
        "[first] hello 0.1",
        "[nested/a] hello 0.4",
        "[tune/trial-0] hello 0.2",
        "[tune/trial-1] hello 0.3",
    ]
    assert shown.returncode == 0, shown.stderr
    assert "has no logs" in shown.stderr and "from the files" in shown.stderr
    assert sorted(shown.stdout.splitlines()) == expected

    # the server no longer has the run (as after a reset): the DAG's files lead to its ops'
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.delete_flow_run(result.flow_run_id)
    gone = cli_in(prefect_server, "logs", result.uuid or "", "--op", "tune")
    assert "does not know run" in gone.stderr, gone.stderr
    assert sorted(gone.stdout.splitlines()) == expected[2:]
