"""``run`` through the warm runner of the background server, against the same command run in
the CLI's own process (``POLYAXON_PREFECT_RUNNER=0``): real CLI processes, one real server
(with its runner) for the module, a Prefect home of the module's own.

The CLI's side never imports Prefect when the runner takes the run; the output lines and exit
codes are those of the CLI's own way; a CLI killed mid-run stops its run (the reaper's rule:
its job stops, its flow run is marked crashed); Ctrl-C stops it as it stops a run in the CLI's
process; a runner killed mid-run is one line, and the run goes on to its own status; two runs
at once keep their own environment and working folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import new_home_env

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
_CLI = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('PREFECT-LOADED' if 'prefect' in sys.modules else 'PREFECT-NOT-LOADED', "
    "file=sys.stderr)\n"
    "sys.exit(code)\n"
)
"""The CLI, saying last on stderr whether its own process imported Prefect."""


def _job(folder: Path, name: str, script: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        f"version: 1.1\nkind: component\nname: {name}\n"
        f"run:\n  kind: job\n  container:\n    command: [python, -c, {json.dumps(script)}]\n"
    )
    return path


def _cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CLI, *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _done(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def _runner_pid(home: Path) -> int | None:
    for line in reversed((home / "polyaxon-prefect-server.log").read_text().splitlines()):
        found = re.match(r"warm runner (\d+) ready", line)
        if found:
            return int(found.group(1))
    return None


def _runner_ready(home: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(home / "polyaxon-prefect-runner.sock"))
        except OSError:
            return False
    return True


def _wait(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, prefect_database_template: Path
) -> Iterator[dict[str, str]]:
    from tests.conftest import seed_prefect_home

    root = tmp_path_factory.mktemp("warm")
    home = seed_prefect_home(root / "prefect", prefect_database_template)
    env = new_home_env(home, root / "artifacts", "600")
    started = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "server", "start"], env=env, capture_output=True, text=True
    )
    assert started.returncode == 0, started.stderr
    try:
        assert _wait(lambda: _runner_ready(home), 240), home / "polyaxon-prefect-server.log"
        stat = (home / "polyaxon-prefect-runner.sock").stat()
        assert stat.st_mode & 0o777 == 0o600  # only its owner may submit runs
        status = subprocess.run(
            [str(BIN / "polyaxon-prefect"), "server", "status"], env=env, capture_output=True
        )
        said = status.stdout.decode().splitlines()[1]
        sock = home / "polyaxon-prefect-runner.sock"
        assert said == f"warm runner: listening at {sock}; `run` goes through it", said
        yield env
    finally:
        subprocess.run([str(BIN / "polyaxon-prefect"), "server", "stop"], env=env, timeout=120)


def _shape(text: str) -> list[str]:
    """Lines without what differs between two runs (times, uuids, ids, durations)."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "UUID", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f-]{27}\b", "ID", text)
    text = re.sub(r"^\d\d:\d\d:\d\d\.\d+ \| ", "", text, flags=re.M)
    text = re.sub(r"'[a-z]+-[a-z]+'", "'NAME'", text)  # Prefect's generated run names
    # Prefect's own warning when its event queue is not empty at exit comes and goes with the
    # machine's load, in either process
    noise = ("PREFECT-", "Still processing items")
    return [line for line in text.splitlines() if not any(word in line for word in noise)]


def _last(text: str) -> str:
    """The last line but Prefect's warning that its event queue is not empty at exit (its
    atexit drain prints it after everything else when the machine is loaded)."""
    return [line for line in text.splitlines() if "Still processing items" not in line][-1]


def _status(env: dict[str, str], run: str) -> str:
    shown = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "get", run, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return str(json.loads(shown.stdout).get("status"))


def test_a_run_prints_and_exits_as_in_the_clis_own_process_and_the_cli_imports_no_prefect(
    server: dict[str, str], tmp_path: Path
) -> None:
    ok = _job(tmp_path, "warm-ok", "print('hello from the job')")
    bad = _job(tmp_path, "warm-bad", "import sys; print('bad luck'); sys.exit(3)")
    cold_env = {**server, "POLYAXON_PREFECT_RUNNER": "0"}
    for path, code in ((ok, 0), (bad, 1)):
        warm = _done(_cli(server, "run", "-f", str(path)))
        cold = _done(_cli(cold_env, "run", "-f", str(path)))
        assert warm[0] == cold[0] == code, (warm[2], cold[2])
        assert _last(warm[2]) == "PREFECT-NOT-LOADED", warm[2]
        assert _last(cold[2]) == "PREFECT-LOADED"  # the switch: the CLI's own way
        assert _shape(warm[1]) == _shape(cold[1])
        assert _shape(warm[2]) == _shape(cold[2])

    warm = _done(_cli(server, "run", "-f", str(ok), "--json"))
    assert warm[0] == 0 and warm[2].splitlines()[-1] == "PREFECT-NOT-LOADED"
    record = json.loads(warm[1])  # stdout holds exactly one JSON object
    assert record["status"] == "succeeded"
    assert _status(server, record["uuid"]) == "succeeded"

    # `restart` starts a run too: the runner takes it (no `import prefect` here either)
    again = _done(_cli(server, "restart", record["uuid"], "--json"))
    assert again[0] == 0 and _last(again[2]) == "PREFECT-NOT-LOADED", again[2]
    restarted = json.loads(again[1])
    assert restarted["status"] == "succeeded" and restarted["uuid"] != record["uuid"]
    assert _status(server, restarted["uuid"]) == "succeeded"


def test_two_runs_at_once_keep_their_own_environment_and_working_folder(
    server: dict[str, str], tmp_path: Path
) -> None:
    script = (
        "import os, time; time.sleep(2); "
        "print('seen', os.getcwd(), os.environ.get('WHO'), os.environ.get('SECRET_A', '-'))"
    )
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        _job(folder, "warm-env", script)  # a job runs in its file's folder
    # `-f warm-env.yaml` is read from each CLI's own working folder
    a = _cli(
        {**server, "WHO": "alice", "SECRET_A": "s3cret"}, "run", "-f", "warm-env.yaml", cwd=first
    )
    b = _cli({**server, "WHO": "bob"}, "run", "-f", "warm-env.yaml", cwd=second)
    (code_a, _, err_a), (code_b, _, err_b) = _done(a), _done(b)
    assert code_a == code_b == 0, (err_a, err_b)
    assert err_a.splitlines()[-1] == err_b.splitlines()[-1] == "PREFECT-NOT-LOADED"
    assert f"seen {first} alice s3cret" in err_a, err_a
    assert f"seen {second} bob -" in err_b, err_b
    assert "s3cret" not in err_b and "alice" not in err_b


def _started_run(
    env: dict[str, str], tmp_path: Path, name: str, seconds: int, until: Path | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """A run whose job sleeps ``seconds`` (or, given ``until``, until that file exists, at most
    ``seconds``), once its job has started."""
    flag = tmp_path / f"{name}.started"
    wait = f"time.sleep({seconds})"
    if until is not None:
        wait = (
            f"deadline = time.monotonic() + {seconds}\n"
            f"while not os.path.exists({str(until)!r}) and time.monotonic() < deadline:\n"
            "    time.sleep(0.05)"
        )
    started = f"open({str(flag)!r}, 'w').write(str(os.getpid()))"
    script = f"import os, time\n{started}\n{wait}\nprint('slept')"
    cli = _cli(env, "run", "-f", str(_job(tmp_path, name, script)), "--json")
    assert _wait(flag.exists, 120), cli.poll()
    return cli, flag


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def _newest_run(env: dict[str, str], name: str) -> str:
    listed = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "ls", "--limit", "20", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return next(row["id"] for row in json.loads(listed.stdout) if row["name"] == name)


def test_a_cli_killed_mid_run_stops_its_run(server: dict[str, str], tmp_path: Path) -> None:
    cli, flag = _started_run(server, tmp_path, "warm-killed", 120)
    job = int(flag.read_text())
    cli.kill()
    cli.wait()
    assert _wait(lambda: not _alive(job), 30)  # the runner saw the CLI go; the reaper stopped it
    run = _newest_run(server, "warm-killed")
    assert _wait(lambda: _status(server, run) == "failed", 30)  # marked crashed, as today


def test_ctrl_c_stops_the_run_as_in_the_clis_own_process(
    server: dict[str, str], tmp_path: Path
) -> None:
    cli, flag = _started_run(server, tmp_path, "warm-interrupted", 120)
    cli.send_signal(signal.SIGINT)
    code, out, err = _done(cli)
    assert code == 130, err
    assert "interrupted (SIGINT): stopping the run" in err
    assert json.loads(out)["status"] == "stopped"
    assert not _alive(int(flag.read_text()))


def test_a_runner_killed_mid_run_is_one_line_and_the_run_ends_with_its_own_status(
    server: dict[str, str], tmp_path: Path
) -> None:
    home = Path(server["PREFECT_HOME"])
    go = tmp_path / "go-on"  # the job goes on to its end once the runner is dead
    cli, _flag = _started_run(server, tmp_path, "warm-orphan", 120, until=go)
    runner = _runner_pid(home)
    assert runner is not None
    os.kill(runner, signal.SIGKILL)
    said = []
    assert cli.stderr is not None
    for line in cli.stderr:  # the job goes on after the runner died, at least until it is said
        said.append(line)
        if "warm runner stopped" in line:
            break
    go.touch()
    code, out, rest = _done(cli)
    err = "".join(said) + rest
    assert code == 0, err
    assert len([line for line in err.splitlines() if "warm runner stopped" in line]) == 1, err
    record = json.loads(out)
    assert record["status"] == "succeeded"
    assert _status(server, record["uuid"]) == "succeeded"
    # the server starts its runner again: the next run is warm
    assert _wait(lambda: _runner_pid(home) not in (None, runner) and _runner_ready(home), 240)
