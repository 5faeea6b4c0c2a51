"""The thin client (`polyaxon_prefect.client`) answers plain ``ls``, ``get``, ``statuses``,
``logs`` (and ``-f``) and ``stop`` exactly as the flow layer does, without importing Prefect,
and the REST routes and fields it reads are still in the server's ``/openapi.json``.

Each command line runs both ways on the same server: in a second process, where the thin
client answers (and the process is checked to have imported no Prefect, Optuna, httpx or
pydantic), and in this process, where Prefect's settings are loaded, so the flow layer does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.client.rest._adapter import missing
from polyaxon_prefect.runtime.session._session import recover_stale_sessions
from polyaxon_prefect.testing.recorded_runs import RecordedRun, record_runs, sample_runs

_THIN = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = ('prefect', 'optuna', 'httpx', 'pydantic')\n"
    "loaded = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
    "print('LOADED', *loaded, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def recorded(prefect_server: str) -> list[RecordedRun]:
    batch = f"thin-{uuid.uuid4().hex[:8]}"
    runs = [dataclasses.replace(r, name=f"{batch}-{r.name}", tags=(batch,)) for r in sample_runs(4)]
    record_runs(prefect_server, runs)
    return runs


_FOREGROUND = """\
import signal
# Ctrl-C as a terminal delivers it to its foreground job: neither ignored nor blocked (a test
# worker's children inherit whatever signal state earlier tests in the worker left)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
"""


def _thin_env(api: str, home: str) -> dict[str, str]:
    # the thin way says why it steps aside: a check that finds Prefect loaded names the reason
    debug = {"POLYAXON_PREFECT_DEBUG_THIN": "1"}
    return {**os.environ, "PREFECT_API_URL": api, "PREFECT_HOME": home, **debug}


def _thin(api: str, argv: list[str], home: str) -> subprocess.CompletedProcess[str]:
    # Earlier tests of this worker killed runs of this server: their dead sessions' journals
    # (in the shared artifacts root) rightly send a command to `connect`, which marks their
    # runs crashed first. Settled here as `connect` does, so the thin way is what runs.
    recover_stale_sessions(api, api.rstrip("/"))
    return subprocess.run(
        [sys.executable, "-c", _THIN, *argv],
        capture_output=True,
        text=True,
        env=_thin_env(api, home),
        timeout=120,
        check=False,
    )


def _ours(text: str, names: list[str], as_json: bool) -> object:
    """What ``ls`` said of our runs only (the shared server holds other tests' runs too)."""
    if as_json:
        return [row for row in json.loads(text) if row["name"] in names]
    return [line for line in text.splitlines() if any(line.startswith(n) for n in names)]


def test_ls_get_statuses_print_the_same_both_ways_and_the_thin_way_imports_no_prefect(
    prefect_server: str,
    recorded: list[RecordedRun],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    home = str(tmp_path / "prefect-home")
    names = [r.name for r in recorded]
    failed = next(r.name for r in recorded if r.status == "failed")
    lines = [
        ["ls", "--limit", "5"],
        ["ls", "--json", "--limit", "8"],
        ["ls", "--status", "failed", "--json"],
        ["get", failed],
        ["get", names[1], "--json"],
        ["get", f"no-such-run-{uuid.uuid4().hex}", "--json"],
        ["statuses", failed],
        ["statuses", names[1], "--json"],
        ["statuses", f"no-such-run-{uuid.uuid4().hex}", "--json"],
    ]
    for argv in lines:
        thin = _thin(prefect_server, argv, home)
        assert thin.stderr.splitlines()[-1] == "LOADED", (argv, thin.stderr)
        code = main(argv)
        flow = capsys.readouterr()
        assert thin.returncode == code, (argv, thin.stderr, flow.err)
        if argv[0] == "ls":
            as_json = "--json" in argv
            ours = _ours(thin.stdout, names, as_json)
            assert ours and ours == _ours(flow.out, names, as_json), argv
        else:
            assert thin.stdout == flow.out, argv
            assert thin.stderr.splitlines()[:-1] == flow.err.splitlines(), argv
    shown = json.loads(_thin(prefect_server, ["get", failed, "--json"], home).stdout)
    assert shown["status"] == "failed" and shown["kind"] == "job"
    assert shown["metrics"] == next(r.metrics for r in recorded if r.name == failed)


def test_ls_with_a_query_a_sort_io_and_csv_prints_the_same_both_ways_without_prefect(
    prefect_server: str,
    recorded: list[RecordedRun],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``ls -q/-s/-io/--to-csv`` (and the ``--flag=value`` forms a descending sort needs) go
    thin: the same rows in the same order, the same table, CSV and JSON as the flow layer's."""
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    home = str(tmp_path / "prefect-home")
    batch = recorded[0].tags[0]
    lines = [
        ["ls", "-q", f"tags:{batch}, metrics.loss:<=0.2", "-s", "-metrics.loss, name"],
        ["ls", "--query", f"tags:{batch}", "--sort", "-name", "-io"],
        ["ls", "-q", f"tags:{batch}", "--sort=-name", "--limit", "2"],
        ["ls", "-q", f"tags:{batch}, status:failed|succeeded", "--to-csv", "--limit", "3"],
        ["ls", "--status", "failed", "-q", f"tags:{batch}", "--json", "--io"],
        ["ls", "-q=name:%no-such-run%", "-s", "params.lr"],
    ]
    said = [_same_both_ways(prefect_server, argv, home, capsys) for argv in lines]
    names = sorted((r for r in recorded if r.metrics["loss"] <= 0.2), key=lambda r: r.name)
    names.sort(key=lambda r: -r.metrics["loss"])
    assert [line.split()[0] for line in said[0].splitlines()[1:]] == [r.name for r in names]
    assert said[1].splitlines()[0].split()[-4:] == ["in.arch", "in.lr", "out.accuracy", "out.loss"]
    by_name = [line.split()[0] for line in said[1].splitlines()[1:]]
    assert [line.split()[0] for line in said[2].splitlines()[1:]] == by_name[:2]
    assert by_name == sorted((r.name for r in recorded), reverse=True)
    assert len(said[3].splitlines()) == 4 and said[3].startswith("name,kind,status,")
    failed = [r.uuid for r in recorded if r.status == "failed"]
    assert sorted(row["uuid"] for row in json.loads(said[4])) == sorted(failed)
    assert said[5] == "no runs\n"
    bad = _thin(prefect_server, ["ls", "-q", "stat:x"], home)  # argparse's line, by the flow layer
    assert bad.returncode == 2 and "unknown field `stat`" in bad.stderr


def test_invalidate_drops_the_same_cache_entries_both_ways_without_prefect(
    prefect_server: str,
    recorded: list[RecordedRun],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``invalidate RUN [--json]`` goes thin: each way drops the one record that names the run
    (written by the op cache itself), leaves another run's, and says the same; a run with no
    entry left, and no such run, are said alike too."""
    from polyaxon_prefect.runtime import RunCache

    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    home = str(tmp_path / "prefect-home")
    cache = RunCache.under(tmp_path / "artifacts")
    target, other = recorded[0], recorded[1]

    def cached() -> None:
        for key, run in (("a" * 64, target), ("b" * 64, other)):
            cache.store(key, uuid=run.uuid, outputs={}, metrics={}, artifacts_path=None)

    for argv in (["invalidate", target.name], ["invalidate", target.name, "--json"]):
        cached()
        thin = _thin(prefect_server, argv, home)
        assert thin.stderr.splitlines() == ["LOADED"], thin.stderr
        assert cache.lookup("a" * 64) is None and cache.lookup("b" * 64) is not None
        cached()  # the flow layer's turn, on the same entries
        code = main(argv)
        flow = capsys.readouterr()
        assert (thin.returncode, thin.stdout, flow.err) == (code, flow.out, ""), argv
        assert cache.lookup("a" * 64) is None and cache.lookup("b" * 64) is not None
    assert json.loads(thin.stdout)["dropped"] == ["a" * 64]
    assert thin.returncode == 0 and target.uuid in json.loads(thin.stdout)["uuids"]
    none = _same_both_ways(prefect_server, ["invalidate", target.name], home, capsys)
    assert none.endswith(f"has no cache entry in {cache.root}: nothing to drop\n")
    missing = ["invalidate", f"no-such-run-{uuid.uuid4().hex}", "--json"]
    assert json.loads(_same_both_ways(prefect_server, missing, home, capsys))["error"]


PY = sys.executable
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
    "version: 1.1\nkind: component\nname: thin-pipe\nrun:\n  kind: dag\n  operations:\n"
    "  - {name: first, pathRef: leaf.yaml, params: {x: {value: 0.1}}}\n"
    "  - {name: nested, pathRef: inner.yaml, dependencies: [first]}\n"
    "  - name: tune\n    pathRef: leaf.yaml\n"
    "    matrix: {kind: mapping, values: [{x: 0.2}, {x: 0.3}]}\n"
)


def _same_both_ways(api: str, argv: list[str], home: str, capsys: Any) -> str:
    """Run ``argv`` the thin way (no Prefect imported) and the flow layer's: the same stdout,
    stderr and exit code; the stdout."""
    thin = _thin(api, argv, home)
    assert thin.stderr.splitlines()[-1] == "LOADED", (argv, thin.stderr)
    code = main(argv)
    flow = capsys.readouterr()
    assert (thin.returncode, thin.stdout) == (code, flow.out), (argv, thin.stderr, flow.err)
    assert thin.stderr.splitlines()[:-1] == flow.err.splitlines(), argv
    return thin.stdout


def test_logs_and_artifacts_print_the_same_both_ways_and_the_thin_way_imports_no_prefect(
    prefect_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A DAG of a job op, a nested DAG op and a sweep op of two trials: every line with its
    op path, ``--op``, ``--tail``, ``--json``, ``-f`` of a finished run, a misspelt op and an
    unknown run; ``artifacts`` of its ops' files, listed and copied."""
    from prefect.logging.handlers import APILogWorker

    from polyaxon_prefect.prefect import run

    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    for name, text in {"leaf.yaml": LEAF, "inner.yaml": INNER, "pipe.yaml": PIPE}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run(tmp_path / "pipe.yaml", cache=False)
    assert result.status == "succeeded", result.message
    APILogWorker.drain_all(timeout=10)
    capsys.readouterr()  # the run's own console lines
    home = str(tmp_path / "prefect-home")
    ref = str(result.flow_run_id)
    shown = _same_both_ways(prefect_server, ["logs", ref], home, capsys)
    for line in ("[first] hello 0.1", "[nested/a] hello 0.4", "[tune/trial-1] hello 0.3"):
        assert line in shown.splitlines(), shown
    lines = [
        ["logs", ref, "--op", "nested", "--json"],
        ["logs", ref, "--tail", "2", "-f"],
        ["logs", ref, "--op", "nope", "--json"],
        ["logs", f"no-such-run-{uuid.uuid4().hex}"],
        ["artifacts", ref, "--json"],
        ["artifacts", ref, "--download", str(tmp_path / "copied")],
    ]
    for argv in lines:
        _same_both_ways(prefect_server, argv, home, capsys)
    listed = _same_both_ways(prefect_server, ["artifacts", ref], home, capsys)
    assert "ops/nested/ops/a/" in listed and (tmp_path / "copied" / "ops" / "first").is_dir()


def _running_job(api: str, name: str) -> str:
    """A flow run in Running that no process holds (a job started elsewhere), with one line."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import FlowRunCreate
    from prefect.client.schemas.objects import FlowRun
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Running, to_state_create

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        flow_id = c.create_flow_from_name("thin-running-job")
        body = FlowRunCreate(flow_id=flow_id, name=name, state=to_state_create(Running()))
        made = c.request(
            "POST", "/flow_runs/", json=body.model_dump(mode="json", exclude_unset=True)
        )
        run_id = FlowRun.model_validate(made.json()).id
        _log(c, run_id, "first line")
    return str(run_id)


def _log(client: Any, run_id: Any, message: str) -> None:
    from datetime import UTC, datetime

    from prefect.client.schemas.actions import LogCreate

    log = LogCreate(
        name="prefect.flow_runs",
        level=20,
        message=message,
        timestamp=datetime.now(UTC),
        flow_run_id=run_id,
    )
    client.create_logs([log])


def _finish_later(api: str, run_id: str, after: float) -> threading.Thread:
    """After ``after`` s, one more line, then the run Completed (as its process ends it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Completed

    def finish() -> None:
        time.sleep(after)
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
            _log(c, run_id, "last line")
            c.set_flow_run_state(run_id, Completed(), force=True)

    thread = threading.Thread(target=finish, daemon=True)
    thread.start()
    return thread


def test_stop_and_logs_follow_print_the_same_both_ways_and_ctrl_c_ends_a_follow(
    prefect_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``logs -f`` of a running job prints its lines until it ends and exits 0, both ways;
    ``stop`` of a running job sets it stopping, of a finished one changes nothing, of an
    unknown one is one error line, both ways; Ctrl-C on the thin ``logs -f`` exits 130 with
    no traceback; a dead server is one line and exit 1."""
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    home = str(tmp_path / "prefect-home")
    batch = uuid.uuid4().hex[:8]
    thin_run, flow_run = (_running_job(prefect_server, f"thin-{batch}-{w}") for w in "ab")

    # -f, both ways: each ends when its run does
    finisher = _finish_later(prefect_server, thin_run, 1.0)
    thin = _thin(prefect_server, ["logs", thin_run, "-f"], home)
    finisher.join()
    assert thin.stderr.splitlines() == ["LOADED"], thin.stderr
    _finish_later(prefect_server, flow_run, 1.0).join(0)
    code = main(["logs", flow_run, "-f"])
    flow = capsys.readouterr()
    assert (thin.returncode, thin.stdout) == (code, flow.out) == (0, "first line\nlast line\n")

    # stop: a finished run both ways (the same run); running ones (one each way)
    _same_both_ways(prefect_server, ["stop", thin_run], home, capsys)
    _same_both_ways(
        prefect_server, ["stop", f"no-such-run-{uuid.uuid4().hex}", "--json"], home, capsys
    )
    thin_run, flow_run = (_running_job(prefect_server, f"thin-{batch}-{w}") for w in "cd")
    thin = _thin(prefect_server, ["stop", thin_run, "--json"], home)
    assert thin.stderr.splitlines() == ["LOADED"], thin.stderr
    assert main(["stop", flow_run, "--json"]) == thin.returncode == 0
    said = [json.loads(thin.stdout), json.loads(capsys.readouterr().out)]
    for answer, run_id, letter in zip(said, (thin_run, flow_run), "cd", strict=True):
        assert answer == {
            "id": run_id,
            "name": f"thin-{batch}-{letter}",
            "status": "stopping",
            "stopping": True,
        }
    shown = json.loads(_thin(prefect_server, ["get", thin_run, "--json"], home).stdout)
    assert shown["status"] == "stopping"

    # Ctrl-C on a thin `logs -f` of a run that goes on
    going = _running_job(prefect_server, f"thin-{batch}-e")
    follow = subprocess.Popen(
        [sys.executable, "-c", _FOREGROUND + _THIN, "logs", going, "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_thin_env(prefect_server, home),
    )
    assert follow.stdout is not None
    assert follow.stdout.readline() == "first line\n"
    follow.send_signal(signal.SIGINT)
    try:
        out, err = follow.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{follow.pid}/status").read_text(encoding="utf-8")
        signals = [line for line in status.splitlines() if line.startswith("Sig")]
        follow.kill()
        out, err = follow.communicate()
        pytest.fail(f"Ctrl-C did not end `logs -f` in 30 s ({signals}); it wrote:\n{out}\n{err}")
    assert (follow.returncode, out, err.splitlines()) == (130, "", ["LOADED"])

    # a dead server: the thin way steps aside and the flow layer says so in one line
    dead = _thin("http://127.0.0.1:9/api", ["logs", going, "-f"], home)
    why, *said = dead.stderr.splitlines()
    assert why.startswith("thin client declined: the server at http://127.0.0.1:9/api did not")
    assert dead.returncode == 1 and dead.stdout == "" and len(said) == 2, dead.stderr
    assert said[0].startswith("error: the Prefect server at PREFECT_API_URL=http://127.0.0.1:9")


def test_the_api_has_every_route_and_field_the_thin_client_reads(prefect_server: str) -> None:
    with urllib.request.urlopen(f"{prefect_server}/openapi.json", timeout=30) as answer:
        openapi = json.load(answer)
    problems = missing(openapi)
    assert not problems, "Prefect's REST API moved: " + "; ".join(problems)
    assert missing({"paths": {}})[0] == "route POST /flow_runs/filter is gone"
