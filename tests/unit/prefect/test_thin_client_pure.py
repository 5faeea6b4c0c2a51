"""The thin client's pure parts are the flow layer's: one state table, one status list, one
reading of the background server's record (no second copy that can drift)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.client.schemas.objects import State, StateType

from polyaxon_prefect.client import SOCKET_FILE, STATE_TYPES, STATUSES, status_of
from polyaxon_prefect.client import _thin_cli as thin_cli
from polyaxon_prefect.client.server import _local_server as background_files
from polyaxon_prefect.client.server import _thin_server as thin_server
from polyaxon_prefect.client.server._runner import socket_address
from polyaxon_prefect.prefect._states import STATE_TYPES as FLOW_STATE_TYPES
from polyaxon_prefect.prefect._states import polyaxon_status
from polyaxon_prefect.prefect.server import _background_server as background
from polyaxon_prefect.specs import Status


def test_the_status_words_and_state_types_are_the_flow_layers() -> None:
    assert list(STATUSES) == [str(s) for s in Status]
    assert {t.value for t in StateType} == {t for types in STATE_TYPES.values() for t in types}
    assert FLOW_STATE_TYPES is STATE_TYPES
    for state_type in StateType:
        for name in ("", "Skipped", "UpstreamFailed", "AwaitingRetry", "Retrying", "Late"):
            state = State(type=state_type, name=name or None)
            assert status_of(state_type.value, name) == polyaxon_status(state)


_HEALTH = (
    "import http.server\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.send_response(200 if self.path == '/api/health' else 404)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        self.end_headers()\n"
    "        self.wfile.write(b'true')\n"
    "    def log_message(self, *args):\n"
    "        pass\n"
    "server = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
    "print(server.server_port, flush=True)\n"
    "server.serve_forever()\n"
)


_STATUS = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "code = main(['server', 'status'])\n"
    "heavy = {m.split('.')[0] for m in sys.modules} & {'prefect', 'pydantic', 'httpx', 'optuna'}\n"
    "print('LOADED', *sorted(heavy), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _status_both_ways(capsys: pytest.CaptureFixture[str]) -> str:
    """``server status`` the thin way (a process that imports no Prefect) and the flow layer's
    (`cmd_server`): the same line and exit code; the line."""
    import argparse

    from polyaxon_prefect.prefect.cli._runs_cli import cmd_server

    thin = subprocess.run(
        [sys.executable, "-c", _STATUS], capture_output=True, text=True, timeout=60, check=False
    )
    assert thin.stderr.splitlines() == ["LOADED"], thin.stderr
    code = cmd_server(argparse.Namespace(action="status"))
    assert (thin.returncode, thin.stdout) == (code, capsys.readouterr().out)
    return thin.stdout


_FIND = (
    "from polyaxon_prefect.client.server._thin_server import thin_server\n"
    "found = thin_server()\n"
    "print(repr(found and (found.api_url, found.notice)))\n"
)


def _thin_found() -> tuple[str, str | None] | None:
    """`thin_server()` as a fresh CLI process finds it (this worker's process may hold Prefect
    threads of earlier tests that import ``prefect.settings`` again, which rightly turns the
    thin way off here): its api URL and notice, or None."""
    import ast

    done = subprocess.run(
        [sys.executable, "-c", _FIND], capture_output=True, text=True, timeout=60, check=True
    )
    found: tuple[str, str | None] | None = ast.literal_eval(done.stdout.strip())
    return found


def test_the_thin_client_and_the_flow_layer_find_the_same_background_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record as `start_server` writes it, naming a live process that runs the server module
    and answers the health check, is the server both ways (and ``server status`` says so alike);
    once that process is gone, neither takes it (and the record is removed)."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delitem(sys.modules, "prefect.settings")  # as in a fresh CLI process
    module = background_files.SERVER_MODULE.decode()
    process = subprocess.Popen(
        [sys.executable, "-c", _HEALTH, module], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = f"http://127.0.0.1:{int(process.stdout.readline())}"
        started = background_files.start_ticks(process.pid)
        record = background.BackgroundServer(process.pid, url, "log", "db", started=started)
        (tmp_path / "home").mkdir()
        background._record_path().write_text(json.dumps(dataclasses.asdict(record)))
        assert background.running_server() == record
        running = f"running at {url} (pid {process.pid}; database: db)\n"
        sock = tmp_path / "home" / SOCKET_FILE
        own = "; `run` runs in its own process\n"
        assert (
            _status_both_ways(capsys)
            == f"{running}warm runner: not running (no socket at {sock}){own}"
        )
        runner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # a runner that died: its socket file is left, nothing listens
        runner.bind(socket_address(sock))
        os.chmod(sock, 0o600)
        said = _status_both_ways(capsys)
        assert said == f"{running}warm runner: not running (nothing listens at {sock}){own}"
        runner.listen(16)  # as the runner does (it accepts; here the probes wait queued)
        monkeypatch.delenv("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", raising=False)
        said = _status_both_ways(capsys)
        assert said == f"{running}warm runner: listening at {sock}; `run` goes through it\n"
        monkeypatch.setenv("POLYAXON_PREFECT_RUNNER", "0")
        said = _status_both_ways(capsys)
        off = "`run` here does not use it (POLYAXON_PREFECT_RUNNER=0)"
        assert said == f"{running}warm runner: listening at {sock}; {off}\n"
        runner.close()
        found = _thin_found()
        assert found is not None and found[0] == f"{url}/api" and found[1]
        # a server too busy to answer within the health check's time (stopped here) is still
        # this home's: taking it for gone would start a second one on the same database
        process.send_signal(signal.SIGSTOP)
        try:
            assert background_files.health(record.api_url, timeout=0.5) == "silent"
            assert background.running_server() == record
        finally:
            process.send_signal(signal.SIGCONT)
        background_files.hold_lease()  # what the server counts its clients by
        assert (background.leases_dir() / str(os.getpid())).exists()
        wrong = dataclasses.replace(record, started=(started or 0) + 1)  # a reused pid
        background._record_path().write_text(json.dumps(dataclasses.asdict(wrong)))
        assert _thin_found() is None and background.running_server() is None
        background._record_path().write_text(json.dumps(dataclasses.asdict(record)))
    finally:
        process.kill()
        process.wait()
    assert _status_both_ways(capsys) == "stopped\n"
    assert not background._record_path().exists()
    assert _thin_found() is None and background.running_server() is None


def test_only_plain_command_lines_and_servers_known_without_prefect_go_thin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert thin_cli._args(["ls", "--limit", "5", "--json"]) == {
        "status": None,
        "limit": 5,
        "json": True,
        "query": None,
        "sort": None,
        "io": False,
        "to_csv": False,
    }
    for words in (["--limit", "0"], ["--status", "done"], ["--json", "--json"]):
        assert thin_cli._args(["ls", *words]) is None, words
    # the query layer's flags: left to `runs_query.thin_ls` (as written), never to `_read_verb`
    assert thin_cli._args(["ls", "-q", "x"]) is None
    assert thin_cli.ls_args(["-q", "a:b", "--sort=-name", "--io", "--to-csv"]) == {
        "status": None,
        "limit": 20,
        "json": False,
        "query": "a:b",
        "sort": "-name",
        "io": True,
        "to_csv": True,
    }
    assert thin_cli.ls_args(["-s", "-name, id"])["sort"] == "-name, id"  # type: ignore[index]
    assert thin_cli.ls_args(["-s", "-name", "-q", "a:b"])["sort"] == "-name"  # type: ignore[index]
    for words in (["-q", "-x"], ["-q", "a:b", "--query", "c:d"], ["-io", "--io"], ["-q"]):
        assert thin_cli.ls_args(words) is None, words  # argparse's to refuse or read
    from polyaxon_prefect.runs_query import thin_ls

    for words in (["-q", "stat:x"], ["-s", "tags"], ["--limit", "5"]):
        assert thin_ls(words) is None, words  # a usage error is argparse's line, exit 2
    assert thin_cli._get_args(["a-run"]) == {"run": "a-run", "json": False}
    for words in (["-w", "x"], [], ["a", "b"], ["--help"]):
        assert thin_cli._get_args(words) is None, words

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api/")
    assert "prefect.settings" in sys.modules and thin_server.thin_server() is None
    monkeypatch.delitem(sys.modules, "prefect.settings")
    assert thin_server.thin_server() == thin_server.ThinServer("http://127.0.0.1:9/api")
    monkeypatch.setenv("PREFECT_API_KEY", "k")  # auth is Prefect's to send
    assert thin_server.thin_server() is None
    monkeypatch.delenv("PREFECT_API_KEY")
    sessions = tmp_path / "artifacts" / ".sessions"
    sessions.mkdir(parents=True)
    # of the chosen server's database (see the next test for another database's)
    journal = "pid 999999999\ntarget http://127.0.0.1:9/api\n"
    (sessions / "s.journal").write_text(journal, encoding="utf-8")
    assert thin_server.thin_server() is None  # `connect` settles a dead session's runs first


def test_only_a_dead_session_of_the_same_database_keeps_the_thin_way_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead session's journal sends a command to `connect`, which marks its runs crashed
    first, only where `connect` would: a journal naming another database (another home, another
    server) is that one's to settle and leaves the thin way on; one cut before its target line
    counts as this database's."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api/")
    monkeypatch.delitem(sys.modules, "prefect.settings", raising=False)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    journals = tmp_path / "artifacts" / ".sessions"
    journals.mkdir(parents=True)
    chosen = ("http://127.0.0.1:9/api", None)
    (journals / "a.journal").write_text(f"pid {dead.pid}\ntarget home:{tmp_path / 'other'}\n")
    assert _thin_found() == chosen
    ours = journals / "b.journal"
    ours.write_text(f"pid {os.getpid()}\ntarget http://127.0.0.1:9/api\nflow-run x\n")  # alive
    assert _thin_found() == chosen
    ours.write_text(f"pid {dead.pid}\ntarget http://127.0.0.1:9/api\nflow-run x\n")
    assert _thin_found() is None
    ours.write_text(f"pid {dead.pid}\n")
    assert _thin_found() is None
    ours.unlink()
    monkeypatch.delenv("PREFECT_API_URL")  # the home's database: no server runs, so none
    (journals / "c.journal").write_text(f"pid {dead.pid}\ntarget home:{tmp_path / 'home'}\n")
    assert _thin_found() is None


def test_a_journal_connect_would_not_settle_never_keeps_the_thin_way_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thin way steps aside for a journal only where `connect` settles it. A journal naming
    no process (an earlier version's session, closed then used again in the same process, went
    on with lines and no header; an empty one is a live session's before its first line) or one
    gone before it is read is never `connect`'s to settle: it must not keep every command off
    the thin way (for good, or on a race with a run that ends). A header cut before its target
    line does, once: the next command's `connect` settles it."""
    from polyaxon_prefect.runtime.session._session import recover_stale_sessions

    api = "http://127.0.0.1:9/api"
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.setenv("PREFECT_API_URL", api)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    journals = tmp_path / "artifacts" / ".sessions"
    journals.mkdir(parents=True)
    (journals / "headerless.journal").write_text("flow-run 1\nsettle {}\n", encoding="utf-8")
    (journals / "empty.journal").write_text("", encoding="utf-8")
    (journals / "group.journal").write_text(f"pid 0\ntarget {api}\n", encoding="utf-8")
    # listed, then gone before it is read (its session ended meanwhile: a run ending as another
    # command starts), as a link to nothing is
    (journals / "gone.journal").symlink_to(journals / "ended")
    assert _thin_found() == (api, None)
    assert recover_stale_sessions(api, api) == 0  # none of them is connect's to settle
    cut = journals / "cut.journal"
    cut.write_text(f"pid {dead.pid}\n", encoding="utf-8")
    assert _thin_found() is None
    assert recover_stale_sessions(api, api) == 1 and not cut.exists()
    assert _thin_found() == (api, None)
    debug = {**os.environ, "POLYAXON_PREFECT_DEBUG_THIN": "1"}
    cut.write_text(f"pid {dead.pid}\n", encoding="utf-8")
    said = subprocess.run(
        [sys.executable, "-c", _FIND], capture_output=True, text=True, env=debug, check=True
    )
    assert said.stderr == (
        f"thin client declined: the dead session {dead.pid} left runs on {api} to mark crashed "
        f"first ({cut})\n"
    )
