"""The background server under faults, for real: killed -9 under a running job, a stale record
whose pid is now another program, two ``server start`` at once on a new home. Real CLI
processes, a new Prefect home and a free loopback port per test. The sweeps resumed after
their server died are in files of their own (`test_server_faults_sweep.py`,
`test_server_faults_pruning.py`: over a minute each), so the parallel suite runs them on other
workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import new_home_env, no_process_left

pytestmark = [pytest.mark.slow, pytest.mark.fault, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
SLOW_JOB = """\
version: 1.1
kind: component
name: slow-answer
outputs: [{name: answer, type: int}]
run:
  kind: job
  container:
    command:
      - python
      - -c
      - "import time; time.sleep(6); from polyaxon_prefect import tracking; \\
        tracking.log_outputs(answer=42)"
"""


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "polyaxon-prefect"), *args], env=env, capture_output=True, text=True, timeout=300
    )


def _record(env: dict[str, str]) -> Path:
    return Path(env["PREFECT_HOME"]) / "polyaxon-prefect-server.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_server(env: dict[str, str]) -> None:
    """`server stop` where a server may run: with no record it could stop nothing (a CLI
    process spared)."""
    if _record(env).exists():
        _cli(env, "server", "stop")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = new_home_env(tmp_path / "prefect", tmp_path / "artifacts", "120")
    try:
        yield env
    finally:
        _stop_server(env)


@pytest.fixture
def used_home(tmp_path: Path, migrated_home: Path) -> Iterator[dict[str, str]]:
    """A home whose database is already built, for the tests about a server dying under runs
    (not about a first start)."""
    env = new_home_env(migrated_home, tmp_path / "artifacts", "120")
    try:
        yield env
    finally:
        _stop_server(env)


def test_a_server_killed_under_a_job_is_one_line_and_the_jobs_own_result(
    used_home: dict[str, str], tmp_path: Path
) -> None:
    home = used_home
    job = tmp_path / "slow.yaml"
    job.write_text(SLOW_JOB)
    started = time.monotonic()
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(job), "--json"],
        env=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the job is running once its run directory has a log
        logs = list((tmp_path / "artifacts").glob("*/*/logs/job.log"))
        if logs and _record(home).exists():
            break
        time.sleep(0.2)
    server = json.loads(_record(home).read_text())["pid"]
    os.killpg(server, signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    took = time.monotonic() - started
    assert process.returncode == 0, err
    result = json.loads(out)
    assert (result["status"], result["outputs"]) == ("succeeded", {"answer": 42})
    said = [line for line in err.splitlines() if "stopped answering" in line]
    assert len(said) == 1 and said[0].startswith("error: the Prefect server at http://127.0.0.1:")
    assert "Traceback" not in err
    assert took < 90, f"the CLI took {took:.0f} s to end after its server died"
    no_process_left(Path(home["PREFECT_HOME"]))  # the job, its reaper, the dead server

    # The next command starts a server again and writes how the run ended (it used to mark
    # it crashed, `failed`, whatever the job did): a second look tells what the CLI printed.
    listed = _cli(home, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row["status"] for row in json.loads(listed.stdout)}
    assert rows["slow-answer"] == "succeeded"


def test_a_stale_record_over_another_program_is_removed_and_nothing_is_signalled(
    home: dict[str, str],
) -> None:
    bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        record = _record(home)
        record.parent.mkdir(parents=True)
        record.write_text(
            json.dumps(
                {
                    "pid": bystander.pid,
                    "url": f"http://127.0.0.1:{home['POLYAXON_PREFECT_SERVER_PORT']}",
                    "log": "server.log",
                    "database": "prefect.db",
                    "started": 1,
                }
            )
        )
        stopped = _cli(home, "server", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == (
            f"not running: removed the record of a server that is gone (pid {bystander.pid} "
            "is no longer it; nothing was signalled)"
        )
        assert bystander.poll() is None, "the unrelated process was signalled"
        assert not record.exists()
        assert _cli(home, "server", "status").returncode == 3
    finally:
        bystander.kill()
        bystander.wait()


def test_two_server_starts_at_once_give_one_server_and_two_clean_exits(
    home: dict[str, str],
) -> None:
    port = home["POLYAXON_PREFECT_SERVER_PORT"]
    starts = [
        subprocess.Popen(
            [str(BIN / "polyaxon-prefect"), "server", "start", "--port", port],
            env=home,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in starts]
    assert [code for code, _out, _err in outcomes] == [0, 0], outcomes
    said = sorted(out.splitlines()[0].split(" at ")[0] for _code, out, _err in outcomes)
    assert said == ["Prefect server already running", "Prefect server started"]
    assert all("Traceback" not in err and "sqlalchemy" not in err for _c, _o, err in outcomes)
    pid = json.loads(_record(home).read_text())["pid"]
    assert _alive(pid)


def test_server_stop_never_signals_what_the_record_does_not_prove_is_its_server(
    home: dict[str, str],
) -> None:
    """A record without its start time (older versions wrote none) over another user's
    ``polyaxon-prefect run``, then one with the right start time over a program that is not
    our server: neither is signalled, each record is removed."""
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "polyaxon-prefect", "run"],
        start_new_session=True,
    )
    record = _record(home)
    record.parent.mkdir(parents=True)
    url = f"http://127.0.0.1:{home['POLYAXON_PREFECT_SERVER_PORT']}"
    fields = {"pid": bystander.pid, "url": url, "log": "server.log", "database": "prefect.db"}
    try:
        record.write_text(json.dumps(fields))
        stopped = _cli(home, "server", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == (
            f"not running: removed a record that cannot prove pid {bystander.pid} is its server "
            "(no start time: an older version wrote it); nothing was signalled"
        )
        assert bystander.poll() is None, "another user's run was signalled"
        assert not record.exists()

        stat = Path(f"/proc/{bystander.pid}/stat").read_text()
        started = int(stat.rsplit(")", 1)[1].split()[19])  # the pid's true start time
        record.write_text(json.dumps({**fields, "started": started}))
        stopped = _cli(home, "server", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert "nothing was signalled" in stopped.stdout
        assert bystander.poll() is None, "a program that is not our server was signalled"
        assert not record.exists()
    finally:
        bystander.kill()
        bystander.wait()


NOOP = """\
version: 1.1
kind: component
name: noop
run:
  kind: job
  container: {command: [python, -c, "print('ran')"]}
"""


def test_a_chosen_api_url_that_does_not_answer_is_an_error_naming_it_never_a_switch(
    home: dict[str, str], tmp_path: Path
) -> None:
    """A dead ``PREFECT_API_URL`` (the environment's, then the profile's) is one line naming it
    and where it is set, exit 1, for ``ls``, ``get``, ``run`` and ``deploy``: no server is
    started in its place, no run directory is made, nothing is left running."""
    job = tmp_path / "noop.yaml"
    job.write_text(NOOP)
    dead = f"http://127.0.0.1:{home['POLYAXON_PREFECT_SERVER_PORT']}/api"  # shaped like ours
    said = (
        f"error: the Prefect server at PREFECT_API_URL={dead} (set in {{source}}) does not "
        f"answer: start it, or {{fix}} to use this home's local server "
        "(`polyaxon-prefect server start`)"
    )
    in_env = {**home, "PREFECT_API_URL": dead}
    expected = said.format(source="the environment", fix="unset PREFECT_API_URL")
    for args in (
        ("ls",),
        ("get", "noop"),
        ("run", "-f", str(job)),
        ("deploy", "-f", str(job), "--pool", "nowhere"),
    ):
        done = _cli(in_env, *args)
        assert (done.returncode, done.stderr.strip()) == (1, expected), args

    assert not Path(home["PREFECT_HOME"]).exists(), "the command wrote to the Prefect home"
    profiles = Path(home["PREFECT_HOME"]) / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text(f'active = "mine"\n[profiles.mine]\nPREFECT_API_URL = "{dead}"\n')
    done = _cli(home, "ls")
    profile = said.format(
        source="the Prefect profile 'mine'", fix="`prefect config unset PREFECT_API_URL`"
    )
    assert (done.returncode, done.stderr.strip()) == (1, profile)

    assert not _record(home).exists() and not list(Path(home["PREFECT_HOME"]).glob("*.db"))
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())
    no_process_left(Path(home["PREFECT_HOME"]))


TWO_OPS = """\
version: 1.1
kind: component
name: two-ops
run:
  kind: dag
  operations:
    - name: a
      component:
        name: a
        run: {kind: job, container: {command: [python, -c, "import time; time.sleep(6)"]}}
    - name: b
      component:
        name: b
        run: {kind: job, container: {command: [python, -c, "import time; time.sleep(6)"]}}
"""


def test_a_server_killed_under_a_dag_ends_with_the_ops_true_statuses(
    used_home: dict[str, str], tmp_path: Path
) -> None:
    """As a job does: the running ops go on to their end and the CLI reports what they did
    (both succeeded, so the DAG did), not "failed" for a server that went away."""
    home = used_home
    dag = tmp_path / "dag.yaml"
    dag.write_text(TWO_OPS)
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(dag), "--json"],
        env=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # both ops run once their run directories have logs
        if len(list((tmp_path / "artifacts").glob("*/*/logs/job.log"))) == 2:
            break
        time.sleep(0.2)
    os.killpg(json.loads(_record(home).read_text())["pid"], signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "succeeded", result
    assert {name: op["status"] for name, op in result["ops"].items()} == {
        "a": "succeeded",
        "b": "succeeded",
    }
    said = [line for line in err.splitlines() if "stopped answering" in line]
    assert len(said) == 1 and "Traceback" not in err
    no_process_left(Path(home["PREFECT_HOME"]))


CHAIN = """\
version: 1.1
kind: component
name: chain
run:
  kind: dag
  operations:
    - name: a
      component:
        name: a
        outputs: [{name: answer, type: int}]
        run:
          kind: job
          container:
            command:
              - python
              - -c
              - "import time; time.sleep(8); from polyaxon_prefect import tracking; \\
                tracking.log_outputs(answer=42)"
    - name: b
      dependencies: [a]
      component:
        name: b
        run:
          kind: job
          container: {command: [python, -c, "open('MARKS/b', 'a').write('ran\\\\n')"]}
"""


def test_a_server_killed_while_an_op_waits_on_the_running_one_tells_both_truths(
    used_home: dict[str, str], tmp_path: Path
) -> None:
    """Op ``b`` waits on ``a``; the server dies while ``a`` runs. ``a`` goes on to its end
    (succeeded, its output recorded), ``b`` never starts (``stopped``, saying why), and the
    next commands on a new server (``get``, ``statuses``) tell the same; ``restart`` goes on
    from ``b``, reusing ``a``."""
    home = used_home
    marks = tmp_path / "marks"
    marks.mkdir()
    project = tmp_path / "project"  # the ops' working folder: nothing else writes there
    project.mkdir()
    dag = project / "chain.yaml"
    dag.write_text(CHAIN.replace("MARKS", str(marks)))
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(dag), "--json"],
        env=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # `a` runs once its run directory has a log
        if list((tmp_path / "artifacts").glob("*/*/logs/job.log")):
            break
        time.sleep(0.2)
    os.killpg(json.loads(_record(home).read_text())["pid"], signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err
    printed = json.loads(out)
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(said) == 1 and "stopped answering" in said[0], err
    assert "Traceback" not in err and "went away" not in out
    url = said[0].split()[5]
    why = f"stopped before it started: the Prefect server at {url} stopped answering"
    ops = {name: (o["status"], o["outputs"], o["message"]) for name, o in printed["ops"].items()}
    assert ops == {"a": ("succeeded", {"answer": 42}, "succeeded"), "b": ("stopped", {}, why)}
    assert (printed["status"], printed["reason"]) == (
        "stopped",
        f"the Prefect server at {url} stopped answering",
    )
    assert not list(marks.iterdir()), "b ran"
    run_path = Path(printed["artifacts_path"])
    recorded = json.loads((run_path / "ops.json").read_text())
    assert {name: (op["status"], op["outputs"]) for name, op in recorded.items()} == {
        "a": ("succeeded", {"answer": 42}),
        "b": ("stopped", {}),
    }
    no_process_left(Path(home["PREFECT_HOME"]))

    # a new server: the run reads back as it ended, not as crashed
    got = _cli(home, "get", printed["uuid"], "--json")
    assert got.returncode == 0, got.stderr
    shown = json.loads(got.stdout)
    assert (shown["status"], shown["message"]) == ("stopped", printed["message"])
    assert shown["ops"] == printed["ops"]
    statuses = _cli(home, "statuses", printed["uuid"])
    assert statuses.returncode == 0, statuses.stderr
    assert statuses.stdout.splitlines()[-1].split("  ")[1:] == ["stopped", printed["message"]]

    restarted = _cli(home, "restart", printed["uuid"], "--json")
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    again = json.loads(restarted.stdout)
    assert again["status"] == "succeeded"
    assert again["ops"]["a"]["message"] == f"reused from run {printed['ops']['a']['uuid']}"
    assert {p.name: p.read_text() for p in marks.iterdir()} == {"b": "ran\n"}


def _trials_running(artifacts: Path, process: subprocess.Popen[str], seconds: float = 300) -> None:
    """Wait until both first trials run (their run directories have a log), for the sweeps'
    files. A loaded machine can take minutes to get there: the server is killed only under
    running trials, never before (the trials would then never start, and nothing that follows
    would be tested)."""
    deadline = time.monotonic() + seconds
    while len(list(artifacts.glob("*/*/logs/job.log"))) < 2:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"the first two trials did not start in {seconds} s"
        time.sleep(0.2)
