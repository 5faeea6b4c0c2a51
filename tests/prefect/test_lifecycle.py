"""The CLI's processes: nothing outlives `polyaxon-prefect run`, however it ends.

Real CLI processes, real jobs, real signals. Processes of a run are found by an environment
variable the test gives the CLI (every process the run starts inherits it), never by name.
Where a test passes the session's test server (``PREFECT_API_URL``), the CLI uses it, so the
flow runs it leaves behind can be read back; the others start the CLI's own local server.
The four first runs at once on a new home, on busy cores, are in `test_first_runs.py` (over a
minute): the parallel suite runs them on another worker.
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

from tests.conftest import seed_prefect_home
from tests.prefect.conftest import MARK, run_processes, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")

PY = sys.executable
CLI = [PY, "-m", "polyaxon_prefect.cli", "run"]


_MARKS: list[str] = []


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    """Whatever a test asserts, none of its processes outlives it (a failed test included)."""
    yield
    while _MARKS:
        for pid in run_processes(_MARKS.pop()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def start_cli(args: list[str], *, env: dict[str, str], mark: str) -> subprocess.Popen[str]:
    _MARKS.append(mark)
    return subprocess.Popen(
        [*CLI, *args],
        env={**env, MARK: mark},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def base_env(tmp_path: Path, api_url: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)
    env["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(tmp_path / "artifacts")
    if api_url:
        env["PREFECT_API_URL"] = api_url
        # the run in the CLI's own process, which the tests signal and kill and find by MARK
        env["POLYAXON_PREFECT_RUNNER"] = "0"
    else:
        env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    return env


def job_file(folder: Path, name: str, code: str, **extra: Any) -> Path:
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": name,
        **extra,
        "run": {"kind": "job", "container": {"command": [PY, "-c", code]}},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def started_then_sleep(flag: Path, seconds: int = 300) -> str:
    """A job that leaves a file when it runs, starts a grandchild, then sleeps."""
    return (
        "import pathlib, subprocess, sys, time, os; "
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep({seconds})']); "
        f"pathlib.Path({str(flag)!r}, os.environ['POLYAXON_PREFECT_RUN_UUID']).touch(); "
        f"time.sleep({seconds})"
    )


def dag_file(folder: Path, flags: Path) -> Path:
    comp = {"name": "sleeper", "run": {"kind": "job", "container": {"command": [
        PY, "-c", started_then_sleep(flags)]}}}  # fmt: skip
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": "lifecycle-dag",
        "run": {
            "kind": "dag",
            "operations": [{"name": "a", "dagRef": "sleeper"}, {"name": "b", "dagRef": "sleeper"}],
            "components": [comp],
        },
    }
    path = folder / "dag.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def sweep_file(folder: Path, flags: Path) -> Path:
    trial = job_file(
        folder,
        "trial",
        started_then_sleep(flags),
        inputs=[{"name": "x", "type": "int"}],
    )
    path = folder / "sweep.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: lifecycle-sweep\n"
        "matrix:\n  kind: grid\n  concurrency: 2\n  params:\n"
        "    x: {kind: choice, value: [1, 2, 3]}\n"
        f"pathRef: {trial.name}\n",
        encoding="utf-8",
    )
    return path


# ----------------------------------------------------------------------------- SIGKILL


@pytest.mark.parametrize("what", ["job", "dag", "sweep"])
def test_sigkill_mid_run_leaves_no_process_and_no_running_flow_run(
    what: str, tmp_path: Path, prefect_server: str, api: Any
):
    flags = tmp_path / "flags"
    flags.mkdir()
    path = {
        "job": lambda: job_file(tmp_path, "lifecycle-job", started_then_sleep(flags)),
        "dag": lambda: dag_file(tmp_path, flags),
        "sweep": lambda: sweep_file(tmp_path, flags),
    }[what]()
    expected_jobs = {"job": 1, "dag": 2, "sweep": 2}[what]
    mark = uuid.uuid4().hex
    cli = start_cli(["-f", str(path), "--json"], env=base_env(tmp_path, prefect_server), mark=mark)

    assert wait_until(lambda: len(list(flags.iterdir())) >= expected_jobs, 90), cli.stderr
    assert len(run_processes(mark)) >= 1 + 2 * expected_jobs  # the CLI, jobs, grandchildren
    cli.kill()
    cli.wait()

    assert wait_until(lambda: not run_processes(mark), 10), run_processes(mark)
    assert wait_until(lambda: _no_running_flow_runs(api, path.stem), 15)


def _no_running_flow_runs(api: Any, _name: str) -> bool:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState
    from prefect.client.schemas.filters import FlowRunFilterStateType as Types

    with get_client(sync_client=True) as client:
        running = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=Types(any_=[StateType.RUNNING]))
            )
        )
    return not [r for r in running if r.name.startswith(("lifecycle", "trial-"))]


def test_sigkill_of_a_cli_with_its_own_server_stops_the_server_too(
    tmp_path: Path, prefect_database_template: Path
):
    flags = tmp_path / "flags"
    flags.mkdir()
    path = job_file(tmp_path, "lifecycle-own", started_then_sleep(flags))
    mark = uuid.uuid4().hex
    env = base_env(tmp_path, None)
    # a home whose database is already built: the CLI's own server starts without migrating
    # it (not a first run: that is test_first_runs.py's)
    seed_prefect_home(Path(env["PREFECT_HOME"]), prefect_database_template)
    cli = start_cli(["-f", str(path)], env=env, mark=mark)

    assert wait_until(lambda: any(flags.iterdir()), 180)
    before = run_processes(mark)
    cli.kill()
    cli.wait()

    assert len(before) >= 4  # the CLI, its server, the job and its grandchild (+ the reaper's none)
    assert wait_until(lambda: not run_processes(mark), 10), run_processes(mark)


# ----------------------------------------------------------------------------- signals


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_signal_stops_a_dag_fast_with_one_line_and_a_final_flow_run(
    sig: int, code: int, tmp_path: Path, prefect_server: str, api: Any
):
    flags = tmp_path / "flags"
    flags.mkdir()
    path = dag_file(tmp_path, flags)
    mark = uuid.uuid4().hex
    cli = start_cli(["-f", str(path), "--json"], env=base_env(tmp_path, prefect_server), mark=mark)
    assert wait_until(lambda: len(list(flags.iterdir())) >= 2, 90)

    sent = time.monotonic()
    cli.send_signal(sig)
    out, err = cli.communicate(timeout=60)
    elapsed = time.monotonic() - sent

    assert cli.returncode == code, err
    assert elapsed < 8, elapsed
    assert [line for line in err.splitlines() if line.startswith("interrupted")] == [
        f"interrupted ({signal.Signals(sig).name}): stopping the run"
    ], err
    assert "Traceback" not in err and "ConnectError" not in err
    payload = json.loads(out)
    assert payload["status"] == "stopped"
    assert {op["status"] for op in payload["ops"].values()} == {"stopped"}
    flow_run = api.flow_run(payload["flow_run_id"])
    assert flow_run.state.type == StateType.CANCELLED
    assert wait_until(lambda: not run_processes(mark), 10), run_processes(mark)


def test_ctrl_c_stops_a_sweep_and_its_trials(tmp_path: Path, prefect_server: str):
    flags = tmp_path / "flags"
    flags.mkdir()
    path = sweep_file(tmp_path, flags)
    mark = uuid.uuid4().hex
    cli = start_cli(["-f", str(path), "--json"], env=base_env(tmp_path, prefect_server), mark=mark)
    assert wait_until(lambda: len(list(flags.iterdir())) >= 2, 90)

    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=60)

    assert cli.returncode == 130, err
    payload = json.loads(out)
    assert payload["status"] == "stopped"
    assert len(list(flags.iterdir())) == 2  # the third trial never started
    assert wait_until(lambda: not run_processes(mark), 10)


# ----------------------------------------------------------------------------- first runs


def test_a_server_that_cannot_start_is_one_clear_error_and_json_on_stdout(tmp_path: Path):
    path = job_file(tmp_path, "no-server", "print('never')")
    env = base_env(tmp_path, None) | {"POLYAXON_PREFECT_SERVER_STARTUP_TIMEOUT": "0.2"}

    cli = start_cli(["-f", str(path), "--json"], env=env, mark=uuid.uuid4().hex)
    out, err = cli.communicate(timeout=120)

    assert cli.returncode == 1
    assert "Traceback" not in err
    assert "POLYAXON_PREFECT_SERVER_STARTUP_TIMEOUT" in err and "prefect server start" in err
    payload = json.loads(out)
    assert payload["status"] == "failed" and "did not answer" in payload["message"]


# ----------------------------------------------------------------------------- heavy output


def test_100_mb_of_output_keeps_memory_bounded_and_the_full_log(
    tmp_path: Path, prefect_server: str
):
    code = (
        "import sys\nline = 'x' * 99 + '\\n'\nblock = line * 10000\n"
        "for _ in range(105): sys.stdout.write(block)\nprint('the last line')\n"
    )
    path = job_file(tmp_path, "loud", code)
    mark = uuid.uuid4().hex
    _MARKS.append(mark)
    env = {**base_env(tmp_path, prefect_server), MARK: mark}
    out_file, err_file = tmp_path / "out", tmp_path / "err"
    with out_file.open("w") as out_handle, err_file.open("w") as err_handle:
        # Files, not pipes: a pipe nobody reads until the end would block the CLI's writes.
        cli = subprocess.Popen(
            [*CLI, "-f", str(path), "--json"], env=env, stdout=out_handle, stderr=err_handle
        )
    peak_kb = 0
    started = time.monotonic()
    while cli.poll() is None and time.monotonic() - started < 120:
        try:
            status = Path(f"/proc/{cli.pid}/status").read_text()
        except OSError:
            break
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak_kb = max(peak_kb, int(line.split()[1]))
        time.sleep(0.2)
    cli.wait(timeout=120)
    out, err = out_file.read_text(), err_file.read_text()

    assert cli.returncode == 0, err[-2000:]
    assert peak_kb < 400 * 1024, peak_kb  # the CLI, Prefect included; was 677 MB and growing
    payload = json.loads(out)
    log = Path(payload["artifacts_path"], "logs", "job.log")
    with log.open(encoding="utf-8") as handle:
        lines = sum(1 for _ in handle)
    assert lines == 1_050_001
    assert "output lines not shown here" in err and str(log) in err


# ----------------------------------------------------------------------------- a dead reaper


def _session_of(mark: str) -> str:
    """The session id, read from a job process of the run (the CLI sets it after its start, so
    its own /proc environ does not show it)."""
    prefix = b"POLYAXON_PREFECT_SESSION="
    for pid in run_processes(mark):
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        found = [e[len(prefix) :].decode() for e in environ if e.startswith(prefix)]
        if found:
            return found[0]
    raise AssertionError("no process of the run carries the session")


def _cmdline(entry: Path) -> bytes:
    """A process's command line; empty when it ended while /proc was being listed (other
    tests' processes come and go meanwhile)."""
    try:
        return (entry / "cmdline").read_bytes()
    except OSError:
        return b""


def test_the_next_run_marks_a_run_crashed_whose_process_and_reaper_were_killed(
    tmp_path: Path, prefect_server: str, api: Any
):
    flags = tmp_path / "flags"
    flags.mkdir()
    env = base_env(tmp_path, prefect_server)
    mark = uuid.uuid4().hex
    cli = start_cli(
        ["-f", str(job_file(tmp_path, "lifecycle-orphan", started_then_sleep(flags)))],
        env=env,
        mark=mark,
    )
    assert wait_until(lambda: any(flags.iterdir()), 90)
    session = _session_of(mark)
    reapers = [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and session.encode() in (cmdline := _cmdline(entry))
        and b"_reaper.py" in cmdline
    ]
    assert len(reapers) == 1
    os.kill(reapers[0], signal.SIGKILL)  # the reaper first, then the CLI: nobody cleans up
    cli.kill()
    cli.wait()
    for pid in run_processes(mark):
        os.kill(pid, signal.SIGKILL)
    journals = list((tmp_path / "artifacts" / ".sessions").glob("*.journal"))
    assert len(journals) == 1
    flow_run_id = journals[0].read_text().split("flow-run ")[1].split()[0]
    assert api.flow_run(flow_run_id).state.type == StateType.RUNNING

    noop = job_file(tmp_path, "lifecycle-next", "pass")
    done = subprocess.run([*CLI, "-f", str(noop)], env=env, capture_output=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert api.flow_run(flow_run_id).state.type == StateType.CRASHED
    assert not list((tmp_path / "artifacts" / ".sessions").glob("*.journal"))
