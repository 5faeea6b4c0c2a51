"""`run_process` against real child processes (Python children, so the tests are portable)."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest

from polyaxon_prefect.runtime import (
    CommandNotFoundError,
    run_process,
)
from tests.unit.runtime.test_process import PY, _env

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX"),
    pytest.mark.process,
]


def _script(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def _is_dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # a zombie waiting for init to reap it is dead for our purpose
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        return state in ("Z", "X")
    return False


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _is_dead(pid):
            return True
        time.sleep(0.05)
    return _is_dead(pid)


def test_success_collects_both_streams(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    result = run_process(
        _script("""
            import sys
            print("hello")
            print("to stderr", file=sys.stderr)
            print("bye")
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=30,
        on_line=lambda stream, line: seen.append((stream, line)),
    )
    assert result.returncode == 0
    assert result.succeeded
    assert result.signal is None
    assert not result.timed_out
    assert result.stdout_tail == ["hello", "bye"]
    assert result.stderr_tail == ["to stderr"]
    assert ("stdout", "hello") in seen and ("stderr", "to stderr") in seen
    assert [line for stream, line in seen if stream == "stdout"] == ["hello", "bye"]


def test_non_zero_exit_keeps_the_last_stderr_lines(tmp_path: Path) -> None:
    result = run_process(
        _script("""
            import sys
            for i in range(120):
                print(f"line {i}", file=sys.stderr)
            sys.exit(3)
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=30,
        on_line=None,
        tail_lines=50,
    )
    assert result.returncode == 3
    assert not result.succeeded
    assert result.signal is None
    assert len(result.stderr_tail) == 50
    assert result.stderr_tail[0] == "line 70"
    assert result.stderr_tail[-1] == "line 119"
    assert result.describe() == "exited with code 3"


def test_lines_arrive_while_the_child_is_still_running(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    received_before_exit: list[str] = []

    def on_line(stream: str, line: str) -> None:
        if line == "ready":
            # The child is blocked until this file exists: getting here proves live streaming.
            received_before_exit.append(line)
            gate.write_text("go")

    result = run_process(
        _script(f"""
            import os, sys, time
            print("ready")
            deadline = time.monotonic() + 20
            while not os.path.exists({str(gate)!r}):
                if time.monotonic() > deadline:
                    sys.exit(7)
                time.sleep(0.02)
            print("released")
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        on_line=on_line,
    )
    assert received_before_exit == ["ready"]
    assert result.returncode == 0, result.stderr_tail
    assert result.stdout_tail == ["ready", "released"]


def test_on_line_runs_in_the_calling_thread(tmp_path: Path) -> None:
    threads: set[int] = set()
    run_process(
        _script("import sys; print('a'); print('b', file=sys.stderr)"),
        env=_env(),
        cwd=tmp_path,
        timeout=30,
        on_line=lambda stream, line: threads.add(threading.get_ident()),
    )
    assert threads == {threading.get_ident()}


def _spawning_child(pid_file: Path, *, ignore_term: bool = False) -> list[str]:
    """A child that starts a sleeping grandchild, records both pids, then sleeps."""
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)" if ignore_term else ""
    return _script(f"""
        import json, os, signal, subprocess, sys, time
        {ignore}
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open({str(pid_file)!r}, "w") as f:
            json.dump([os.getpid(), grandchild.pid], f)
        print("spawned")
        time.sleep(120)
    """)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids.json"
    started = time.monotonic()
    result = run_process(
        _spawning_child(pid_file), env=_env(), cwd=tmp_path, timeout=1.5, on_line=None
    )
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert not result.succeeded
    assert result.signal == signal.SIGTERM
    assert result.describe().startswith("timed out after")
    assert elapsed < 15
    child, grandchild = json.loads(pid_file.read_text())
    assert _wait_dead(child)
    assert _wait_dead(grandchild), "the grandchild survived the timeout"


def test_timeout_escalates_to_sigkill_after_the_grace_period(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids.json"
    started = time.monotonic()
    result = run_process(
        _spawning_child(pid_file, ignore_term=True),
        env=_env(),
        cwd=tmp_path,
        timeout=1.0,
        kill_grace=1.0,
        on_line=None,
    )
    assert result.timed_out
    assert result.signal == signal.SIGKILL
    assert time.monotonic() - started >= 2.0  # deadline plus grace: SIGTERM was tried first
    child, grandchild = json.loads(pid_file.read_text())
    assert _wait_dead(child) and _wait_dead(grandchild)


def test_leftover_background_process_is_stopped_when_the_child_exits(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = run_process(
        _script(f"""
            import subprocess, sys
            p = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            open({str(pid_file)!r}, "w").write(str(p.pid))
            print("main done")
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        kill_grace=1.0,
        on_line=None,
    )
    assert result.returncode == 0
    assert result.stdout_tail == ["main done"]
    assert _wait_dead(int(pid_file.read_text()))


def test_leftover_that_ignores_sigterm_gets_sigkill(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
    result = run_process(
        _script(f"""
            import subprocess, sys, time
            p = subprocess.Popen(
                [sys.executable, "-c", {stubborn!r}],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            open({str(pid_file)!r}, "w").write(str(p.pid))
            time.sleep(0.5)  # let it install its handler
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        kill_grace=1.0,
        on_line=None,
    )
    assert result.returncode == 0
    assert _wait_dead(int(pid_file.read_text()))


def test_grandchild_holding_the_pipe_does_not_hang_the_run(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_process(
        _script("""
            import subprocess, sys
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print("main done")
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        kill_grace=1.0,
        on_line=None,
    )
    assert result.returncode == 0
    assert result.stdout_tail == ["main done"]
    assert time.monotonic() - started < 15


def test_death_by_signal_is_reported(tmp_path: Path) -> None:
    result = run_process(
        _script("""
            import os, signal
            print("about to die", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=30,
        on_line=None,
    )
    assert result.returncode == -signal.SIGKILL
    assert result.signal == signal.SIGKILL
    assert not result.timed_out
    assert "SIGKILL" in result.describe()
    assert result.stdout_tail == ["about to die"]


def test_cancel_event_stops_the_child(tmp_path: Path) -> None:
    cancel = threading.Event()
    pid_file = tmp_path / "pids.json"

    def on_line(stream: str, line: str) -> None:
        if line == "spawned":
            cancel.set()

    result = run_process(
        _spawning_child(pid_file),
        env=_env(),
        cwd=tmp_path,
        timeout=60,
        on_line=on_line,
        cancel_event=cancel,
        kill_grace=1.0,
    )
    assert result.cancelled
    assert not result.timed_out
    assert not result.succeeded
    child, grandchild = json.loads(pid_file.read_text())
    assert _wait_dead(child) and _wait_dead(grandchild)


def test_interrupting_the_caller_leaves_no_orphans(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids.json"

    def on_line(stream: str, line: str) -> None:
        if line == "spawned":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_process(
            _spawning_child(pid_file),
            env=_env(),
            cwd=tmp_path,
            timeout=60,
            on_line=on_line,
            kill_grace=1.0,
        )
    child, grandchild = json.loads(pid_file.read_text())
    assert _wait_dead(child) and _wait_dead(grandchild)


def test_command_is_looked_up_on_the_childs_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mytool"
    tool.write_text(f"#!{PY}\nprint('from mytool')\n")
    tool.chmod(0o755)
    result = run_process(
        ["mytool"], env=_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"), cwd=tmp_path
    )
    assert result.stdout_tail == ["from mytool"]
    with pytest.raises(CommandNotFoundError):
        run_process(["mytool"], env=_env(), cwd=tmp_path)


def test_relative_paths_resolve_against_cwd_and_must_be_executable(tmp_path: Path) -> None:
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho trained\n")
    with pytest.raises(CommandNotFoundError, match=r"not executable.*chmod \+x"):
        run_process(["./train.sh"], env=_env(), cwd=tmp_path)
    script.chmod(0o755)
    assert run_process(["./train.sh"], env=_env(), cwd=tmp_path).stdout_tail == ["trained"]
    with pytest.raises(CommandNotFoundError, match="no file at"):
        run_process(["./missing.sh"], env=_env(), cwd=tmp_path)


def test_shell_metacharacters_stay_literal_arguments(tmp_path: Path) -> None:
    hostile = ["; touch pwned", "$(touch pwned2)", "`touch pwned3`", "&& touch pwned4", "a b"]
    result = run_process(
        [PY, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *hostile],
        env=_env(),
        cwd=tmp_path,
        timeout=30,
    )
    assert json.loads(result.stdout_tail[0]) == hostile
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_env_is_the_whole_child_environment(tmp_path: Path) -> None:
    result = run_process(
        _script("import os; print(os.environ.get('ONLY_THIS'), os.environ.get('HOME'))"),
        env={"ONLY_THIS": "yes", "PATH": os.environ["PATH"]},
        cwd=tmp_path,
        timeout=30,
    )
    assert result.stdout_tail == ["yes None"]


def test_secrets_are_masked_in_lines_and_tails(tmp_path: Path) -> None:
    seen: list[str] = []
    result = run_process(
        _script("""
            import sys
            print("token=s3cr3t-value user=ab")
            print("again s3cr3t-value-longer", file=sys.stderr)
        """),
        env=_env(),
        cwd=tmp_path,
        timeout=30,
        on_line=lambda stream, line: seen.append(line),
        secrets=["s3cr3t-value", "s3cr3t-value-longer", "ab", ""],
    )
    assert seen == ["token=*** user=ab", "again ***"] or seen == [
        "again ***",
        "token=*** user=ab",
    ]
    assert result.stdout_tail == ["token=*** user=ab"]
    assert result.stderr_tail == ["again ***"]
    assert "s3cr3t" not in " ".join(seen + result.stdout_tail + result.stderr_tail)
