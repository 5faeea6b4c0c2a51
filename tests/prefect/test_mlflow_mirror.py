"""The MLflow mirror (docs/guide/mlflow.md) read back through MLflow's own client, against a
real MLflow: its SQLite store, and a ``mlflow server`` on loopback.

A job that logs 3 steps is seen in MLflow while it runs and ends there with its params, its
metrics' history at their steps, its outputs, tags, status and artifacts (never a link's
target); a DAG holding a distributed op and a sweep is a parent run with its ops nested, and
the sweep's trials nested under it, the distributed op written once; a server that does not
answer is one line and the run still succeeds; the switch turns it off without loading MLflow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from polyaxon_prefect.prefect import RunResult, run
from tests.prefect.conftest import cli_on, wait_until

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

# Looked up, not imported: importing MLflow costs seconds of CPU in every test worker that
# collects this file, and one worker runs it.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("mlflow") is None,
        reason="the `mlflow` package (the test extra) runs these",
    ),
]

SCRIPT = Path(__file__).with_name("metrics_script.py")


def _job(folder: Path, name: str = "trainer", go: Path | None = None, extra: str = "") -> Path:
    command = [sys.executable, str(SCRIPT), "{{ lr }}", *([str(go)] if go else [])]
    text = (
        f"version: 1.1\nkind: component\nname: {name}\ntags: [demo, mlflow]\n{extra}"
        "inputs: [{name: lr, type: float, value: 0.1, isOptional: true}]\n"
        "outputs: [{name: loss, type: float}, {name: note, type: str}]\n"
        f"run: {{kind: job, container: {{command: {json.dumps(command)}}}}}\n"
    )
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _runs(client: MlflowClient, project: str) -> list[Any]:
    experiment = client.get_experiment_by_name(project)
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


def _history(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def _files(client: MlflowClient, run_id: str, path: str | None = None) -> list[str]:
    found = []
    for item in client.list_artifacts(run_id, path):
        found += _files(client, run_id, item.path) if item.is_dir else [item.path]
    return found


def _check_job(client: MlflowClient, mirrored: Any, result: RunResult, lr: float) -> None:
    """The job's MLflow run says what the run did, field by field."""
    run_id, tags = mirrored.info.run_id, mirrored.data.tags
    assert mirrored.info.status == "FINISHED"
    assert mirrored.info.end_time >= mirrored.info.start_time
    assert mirrored.data.params == {"lr": str(lr)}
    assert _history(client, run_id, "loss") == [(0, lr * 3), (1, lr * 2), (2, lr)]
    assert _history(client, run_id, "acc") == [(0, 0.5), (1, 0.6), (2, 0.7)]
    assert tags["polyaxon.uuid"] == result.uuid
    assert (tags["polyaxon.op"], tags["polyaxon.kind"], tags["polyaxon.status"]) == (
        "trainer",
        "job",
        "succeeded",
    )
    assert tags["polyaxon.tags"] == "demo,mlflow" and tags["demo"] == ""
    # `loss` is a logged metric: its history stays the metric's, the output is a tag
    assert tags["polyaxon.output.loss"] == str(lr * 0.5)
    assert tags["polyaxon.output.note"] == "ok"
    assert tags["prefect.flow_run_id"] == result.flow_run_id
    assert tags["prefect.flow_run_url"].endswith(f"/runs/flow-run/{result.flow_run_id}")
    files = _files(client, run_id)
    assert {"model.txt", "outputs/metrics.jsonl", "outputs/outputs.json"} <= set(files)
    assert "leak.txt" not in files  # a link is never followed, and it is named
    assert "leak.txt: a link" in tags["polyaxon.artifacts_skipped"]


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def mirrored_to(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``mirrored_to(uri, project)``: runs of this test mirrored to ``uri``, in ``project``
    (MLflow keeps a SQLite store's artifacts in ./mlruns: the test's own folder)."""

    def set_up(uri: str, project: str) -> MlflowClient:
        from mlflow.tracking import MlflowClient

        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        monkeypatch.setenv("POLYAXON_PREFECT_PROJECT", project)
        monkeypatch.delenv("POLYAXON_PREFECT_MLFLOW", raising=False)
        return MlflowClient(tracking_uri=uri)

    return set_up


def test_a_job_is_mirrored_as_it_goes_and_ends_with_all_it_did(
    tmp_path: Path, sqlite_store: str, mirrored_to: Any
) -> None:
    client = mirrored_to(sqlite_store, "mirror-job")
    go = tmp_path / "go"
    seen: list[tuple[str, int]] = []

    def watch() -> None:
        """While the job waits after step 1, MLflow has it running with those steps."""

        def running() -> bool:
            runs = _runs(client, "mirror-job")
            if runs and len(_history(client, runs[0].info.run_id, "loss")) == 2:
                seen.append((runs[0].info.status, 2))
            return bool(seen)

        try:
            wait_until(running, 150, step=0.5)
        finally:
            go.touch()  # the job goes on either way

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result = run(_job(tmp_path, go=go), {"lr": 0.25}, cache=False)
    watcher.join(10)
    assert seen == [("RUNNING", 2)], "the running job did not show in MLflow with its steps"
    assert result.succeeded, result.message
    (mirrored,) = _runs(client, "mirror-job")
    _check_job(client, mirrored, result, 0.25)
    assert "mlflow.parentRunId" not in mirrored.data.tags


def test_a_retried_job_is_one_mlflow_run_that_ends_as_its_last_attempt(
    tmp_path: Path, sqlite_store: str, mirrored_to: Any, make_component: Any
) -> None:
    client = mirrored_to(sqlite_store, "mirror-retry")
    script = Path(__file__).with_name("job_script.py")  # its first attempt fails
    path = make_component(
        f"container:\n  command: [python, '{script}', flaky, '{tmp_path / 'attempts'}']\n",
        outputs="- {name: loss, type: float}\n",
        extra="termination: {maxRetries: 1}\n",
        name="flaky",
    )
    result = run(path, cache=False)
    assert result.succeeded, result.message
    (mirrored,) = _runs(client, "mirror-retry")
    assert mirrored.info.status == "FINISHED"
    assert mirrored.data.tags["polyaxon.status"] == "succeeded"
    assert mirrored.data.metrics == {"loss": 1.0}


def _dag(folder: Path) -> Path:
    _job(folder)
    command = json.dumps([sys.executable, str(SCRIPT), "0.5"])
    (folder / "ddp.yaml").write_text(
        "version: 1.1\nkind: component\nname: ddp\n"
        "outputs: [{name: loss, type: float}, {name: note, type: str}]\n"
        "run:\n  kind: pytorchjob\n"
        f"  master: {{replicas: 1, container: {{command: {command}}}}}\n"
        f"  worker: {{replicas: 1, container: {{command: {command}}}}}\n",
        encoding="utf-8",
    )
    path = folder / "pipeline.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: pipeline\ntags: [pipe]\n"
        "run:\n  kind: dag\n  operations:\n"
        "  - {name: first, pathRef: ddp.yaml}\n"
        "  - name: tune\n    pathRef: trainer.yaml\n    dependencies: [first]\n"
        "    matrix: {kind: mapping, values: [{lr: 0.01}, {lr: 0.02}]}\n",
        encoding="utf-8",
    )
    return path


def test_a_dag_and_its_sweep_are_parents_of_their_ops_and_trials(
    tmp_path: Path, sqlite_store: str, mirrored_to: Any
) -> None:
    client = mirrored_to(sqlite_store, "mirror-dag")
    result = run(_dag(tmp_path), cache=False)
    assert result.succeeded, result.message
    runs = {r.info.run_name: r for r in _runs(client, "mirror-dag")}
    # one MLflow run per Polyaxon run: the distributed op's replicas wrote no run of their own
    assert sorted(runs) == ["first", "pipeline", "trial-0 lr=0.01", "trial-1 lr=0.02", "tune"]
    parent = {name: r.data.tags.get("mlflow.parentRunId") for name, r in runs.items()}
    ids = {name: r.info.run_id for name, r in runs.items()}
    assert parent["pipeline"] is None
    assert parent["first"] == parent["tune"] == ids["pipeline"]
    assert parent["trial-0 lr=0.01"] == parent["trial-1 lr=0.02"] == ids["tune"]
    assert {r.info.status for r in runs.values()} == {"FINISHED"}
    assert runs["pipeline"].data.tags["polyaxon.uuid"] == result.uuid
    kinds = {name: r.data.tags["polyaxon.kind"] for name, r in runs.items()}
    assert (kinds["pipeline"], kinds["first"], kinds["tune"]) == ("dag", "pytorchjob", "matrix")
    # the main replica's history, once (the worker logged the same steps in its own folder)
    assert _history(client, ids["first"], "loss") == [(0, 1.5), (1, 1.0), (2, 0.5)]
    for index, lr in enumerate((0.01, 0.02)):
        trial = runs[f"trial-{index} lr={lr}"]
        assert trial.data.params == {"lr": str(lr)}
        assert trial.data.tags["polyaxon.iteration"] == str(index)
        assert len(_history(client, trial.info.run_id, "loss")) == 3
    assert runs["tune"].data.params == {}  # the matrix sets `lr`: the trials' params hold it


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``mlflow server`` on a free loopback port (SQLite store, proxied artifacts): one
    worker, no job runner, so it starts in seconds rather than a minute."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    command += ["--backend-store-uri", f"sqlite:///{folder / 'server.db'}"]
    command += ["--artifacts-destination", str(folder / "artifacts")]
    log = folder / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert server.poll() is None, log.read_text(errors="replace")[-2000:]
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    try:
        assert wait_until(healthy, 240, step=0.5), "mlflow server did not start"
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def test_a_job_is_mirrored_to_an_mlflow_server(
    tmp_path: Path, mlflow_server: str, mirrored_to: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    client = mirrored_to(mlflow_server, "mirror-server")
    cached = "cache: {disable: false}\n"
    result = run(_job(tmp_path, extra=cached), {"lr": 0.5})
    assert result.succeeded, result.message
    (mirrored,) = _runs(client, "mirror-server")  # the experiment made by the mirror
    _check_job(client, mirrored, result, 0.5)
    # the same run again is a cache hit: a run of its own in MLflow, saying whose outputs
    again = run(_job(tmp_path, extra=cached), {"lr": 0.5})
    assert again.cached and again.uuid == result.uuid
    (hit,) = [r for r in _runs(client, "mirror-server") if r.info.run_id != mirrored.info.run_id]
    assert hit.info.status == "FINISHED" and hit.data.params == {"lr": "0.5"}
    assert hit.data.tags["polyaxon.cached_from"] == result.uuid
    assert hit.data.tags["polyaxon.uuid"] != result.uuid
    assert hit.data.tags["polyaxon.output.note"] == "ok"
    assert hit.data.metrics == {"loss": 0.25} and _files(client, hit.info.run_id) == []
    # MLflow's set_terminated writes "View run" lines for a server: not ours (`run --json`)
    assert "View run" not in capfd.readouterr().out


def test_a_server_that_does_not_answer_is_one_line_and_the_run_succeeds(
    tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", dead)
    started = time.monotonic()
    done = cli_on(prefect_server, "run", "-f", str(_job(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert "status: succeeded" in done.stdout
    said = [line for line in (done.stdout + done.stderr).splitlines() if "MLflow" in line]
    assert len(said) == 1, said
    assert f"MLflow mirror stopped ({dead}): no server answers" in said[0]
    assert "the run goes on without it" in said[0]
    assert time.monotonic() - started < 90  # not MLflow's minutes of retries


def test_the_switch_turns_the_mirror_off_without_loading_mlflow(
    tmp_path: Path, prefect_server: str
) -> None:
    store = tmp_path / "off.db"
    code = (
        "import sys; from polyaxon_prefect.prefect import run; "
        f"r = run({str(_job(tmp_path))!r}, cache=False); "
        "print(r.status, 'mlflow' in sys.modules)"
    )
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    env |= {"MLFLOW_TRACKING_URI": f"sqlite:///{store}", "POLYAXON_PREFECT_MLFLOW": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "succeeded False"
    assert not store.exists() and not (tmp_path / "mlruns").exists()
