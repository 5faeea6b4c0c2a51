"""A run's metric history where people look: ``metrics RUN`` (text, ``--json``, ``--plot``)
read by a second process (then in this one: each second process costs seconds of imports, and
reading is the same code), TensorBoard event files read back with TensorBoard's own reader,
the chart artifact on the run, and ``tensorboard RUN`` serving it; a DAG's ops and a sweep's
trials under their paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.runtime import find_run_path
from tests.prefect.conftest import cli_in, cli_on

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)

PY = sys.executable
TRAIN = """\
import sys
from polyaxon_prefect import tracking
for step in range(3):
    tracking.log_metrics(step=step, loss=float(sys.argv[1]) / (step + 1), accuracy=0.5 + step / 10)
"""


def _job(folder: Path, name: str, scale: str = "{{ scale }}") -> Path:
    (folder / "train.py").write_text(TRAIN, encoding="utf-8")
    path = folder / f"{name}.yaml"
    path.write_text(
        f"version: 1.1\nkind: component\nname: {name}\n"
        "inputs: [{name: scale, type: float, value: 1.0, isOptional: true}]\n"
        f'run: {{kind: job, container: {{command: ["{PY}", "{folder / "train.py"}", '
        f'"{scale}"]}}}}\n',
        encoding="utf-8",
    )
    return path


def _json(api: str, *args: str, second_process: bool = False) -> Any:
    done = (cli_on if second_process else cli_in)(api, "metrics", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _steps(history: dict[str, Any], name: str = "loss") -> list[tuple[int, float]]:
    return [(point["step"], point["value"]) for point in history[name]]


def _board_runs(url: str, process: subprocess.Popen[str], seconds: float = 120) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "tensorboard exited"
        try:
            with urllib.request.urlopen(url + "data/runs", timeout=5) as response:
                runs = json.loads(response.read())
            if runs:
                return list(runs)
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url}data/runs listed no run in {seconds:.0f}s")


def test_a_job_that_logs_three_steps_has_its_history_events_chart_and_tensorboard(
    tmp_path: Path, prefect_server: str, api: Any
) -> None:
    result = run(_job(tmp_path, "metrics-job"))
    assert result.status == "succeeded", result.message

    history = _json(prefect_server, "metrics-job", second_process=True)  # a name: its latest run
    assert list(history) == ["loss", "accuracy"]
    assert _steps(history) == [(0, 1.0), (1, 0.5), (2, 1 / 3)]
    assert all(point["timestamp"] for point in history["loss"])
    only = _json(prefect_server, str(result.flow_run_id), "--name", "accuracy")
    assert list(only) == ["accuracy"] and len(only["accuracy"]) == 3

    typo = cli_in(prefect_server, "metrics", "metrics-job", "--name", "los")
    assert typo.returncode == 1
    assert "has no metric `los`; its metrics: loss, accuracy" in typo.stderr

    plot = cli_in(prefect_server, "metrics", result.uuid, "--plot")
    assert plot.returncode == 0, plot.stderr
    assert "loss (3 points)" in plot.stdout and "•" in plot.stdout

    run_dir = Path(result.artifacts_path)
    events = EventAccumulator(str(run_dir / "outputs" / "tensorboard" / "metrics"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["accuracy", "loss"]
    loss = events.Scalars("loss")
    assert [e.step for e in loss] == [0, 1, 2]
    assert [e.value for e in loss] == pytest.approx([1.0, 0.5, 1 / 3])

    charts = [a for a in api.artifacts(str(result.flow_run_id)) if a.key == "metrics-job-metrics"]
    assert len(charts) == 1 and charts[0].type == "markdown"
    assert charts[0].data.count("data:image/svg+xml;base64,") == 2
    assert "| loss | 3 | 1 | 0.3333 | 0.3333 | 1 |" in charts[0].data

    url, board = _tensorboard(prefect_server, "metrics-job")
    try:
        assert "metrics-job/tensorboard/metrics" in _board_runs(url, board)
    finally:
        board.terminate()  # passed on to TensorBoard: nothing outlives the command
        assert board.wait(timeout=30) is not None
    url, board = _tensorboard(prefect_server)  # no RUN: every run of the project
    try:
        assert f"{result.uuid}/outputs/tensorboard/metrics" in _board_runs(url, board)
    finally:
        board.terminate()
        assert board.wait(timeout=30) is not None


def _tensorboard(api: str, *runs: str) -> tuple[str, subprocess.Popen[str]]:
    """``tensorboard RUN...`` started, and the address its first line says it serves."""
    board = subprocess.Popen(
        [PY, "-m", "polyaxon_prefect.cli", "tensorboard", *runs],
        env={**os.environ, "PREFECT_API_URL": api},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert board.stdout is not None
    first = board.stdout.readline()
    what = "1 run" if runs else "every run in "
    assert first.startswith(f"TensorBoard on {what}"), first
    return "http" + first.split(": http", 1)[1].split(" ", 1)[0], board


def test_a_dags_ops_and_a_sweeps_trials_each_have_their_history(
    tmp_path: Path, prefect_server: str
) -> None:
    _job(tmp_path, "scaled")
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        "version: 1.1\nkind: component\nname: metrics-dag\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: first, pathRef: scaled.yaml}\n"
        "  - {name: tune, pathRef: scaled.yaml, dependencies: [first],\n"
        "     matrix: {kind: grid, params: {scale: {kind: choice, value: [2.0, 4.0]}}}}\n",
        encoding="utf-8",
    )
    result = run(dag)
    assert result.status == "succeeded", result.message

    every = _json(prefect_server, str(result.flow_run_id))
    assert sorted(every["ops"]) == ["first", "tune/trial-0", "tune/trial-1"]
    assert _steps(every["ops"]["first"])[0] == (0, 1.0)
    assert _steps(every["ops"]["tune/trial-1"]) == [(0, 4.0), (1, 2.0), (2, 4 / 3)]

    one = _json(prefect_server, str(result.flow_run_id), "--op", "tune", "--trial", "0")
    assert _steps(one) == [(0, 2.0), (1, 1.0), (2, 2 / 3)]  # one trial: its history alone

    wrong = cli_in(prefect_server, "metrics", str(result.flow_run_id), "--op", "nope")
    assert wrong.returncode == 1
    assert "has no op `nope`; its ops: first, tune, tune/trial-0, tune/trial-1" in wrong.stderr


def test_a_distributed_run_writes_events_from_rank_0_and_from_a_replica_that_logs(
    tmp_path: Path,
) -> None:
    script = tmp_path / "replica.py"
    script.write_text(
        "import os\nfrom polyaxon_prefect import tracking\n"
        "rank = int(os.environ['RANK'])\n"
        "if rank != 1:  # worker-0 (rank 1) logs nothing\n"
        "    for step in range(2):\n"
        "        tracking.log_metrics(step=step, loss=rank + step / 10)\n",
        encoding="utf-8",
    )
    command = json.dumps([PY, str(script)])
    path = tmp_path / "ddp.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: metrics-ddp\nrun:\n  kind: pytorchjob\n"
        f"  master: {{replicas: 1, container: {{command: {command}}}}}\n"
        f"  worker: {{replicas: 2, container: {{command: {command}}}}}\n",
        encoding="utf-8",
    )
    result = run(path)
    assert result.status == "succeeded", result.message

    def loss(outputs: Path) -> list[tuple[int, float]]:
        events = EventAccumulator(str(outputs / "tensorboard" / "metrics"))
        events.Reload()
        return [(e.step, round(e.value, 3)) for e in events.Scalars("loss")]

    run_dir = Path(result.artifacts_path)
    assert loss(run_dir / "outputs") == [(0, 0.0), (1, 0.1)]  # the master: rank 0
    replicas = run_dir / "replicas"
    assert loss(replicas / "worker-1" / "outputs") == [(0, 2.0), (1, 2.1)]
    assert not (replicas / "worker-0" / "outputs" / "tensorboard").exists()


def test_a_retried_job_shows_its_last_attempts_metrics_alone(
    tmp_path: Path, prefect_server: str
) -> None:
    script = tmp_path / "flaky.py"
    marker = tmp_path / "attempted"
    script.write_text(
        "import pathlib, sys\nfrom polyaxon_prefect import tracking\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "first = not marker.exists()\n"
        "marker.touch()\n"
        "for step in range(3 if first else 2):\n"
        "    tracking.log_metrics(step=step, loss=100.0 if first else float(step))\n"
        "sys.exit(1 if first else 0)\n",
        encoding="utf-8",
    )
    path = tmp_path / "flaky.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: metrics-retried\n"
        "termination: {maxRetries: 1}\n"
        f'run: {{kind: job, container: {{command: ["{PY}", "{script}"]}}}}\n',
        encoding="utf-8",
    )
    result = run(path)
    assert result.status == "succeeded", result.message

    assert _steps(_json(prefect_server, str(result.flow_run_id))) == [(0, 0.0), (1, 1.0)]
    events = EventAccumulator(str(Path(result.artifacts_path, "outputs", "tensorboard", "metrics")))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 0.0), (1, 1.0)]


def test_a_running_jobs_history_and_event_files_grow_as_it_logs(
    tmp_path: Path, prefect_server: str
) -> None:
    """Before the job reports its uuid (when it ends), its folder's uuid names it."""
    script = tmp_path / "slow.py"
    uuid_file, go = tmp_path / "uuid", tmp_path / "go"
    script.write_text(
        "import os, pathlib, time\nfrom polyaxon_prefect import tracking\n"
        "tracking.log_metrics(step=0, loss=1.0)\n"
        f"pathlib.Path({str(uuid_file)!r}).write_text(os.environ['POLYAXON_PREFECT_RUN_UUID'])\n"
        f"while not pathlib.Path({str(go)!r}).exists():\n    time.sleep(0.1)\n"
        "tracking.log_metrics(step=1, loss=0.5)\n",
        encoding="utf-8",
    )
    path = tmp_path / "slow.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: metrics-running\n"
        f'run: {{kind: job, container: {{command: ["{PY}", "{script}"]}}}}\n',
        encoding="utf-8",
    )
    job = subprocess.Popen(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path)],
        env={**os.environ, "PREFECT_API_URL": prefect_server},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not uuid_file.exists() and time.monotonic() < deadline:
            assert job.poll() is None, "the run ended early"
            time.sleep(0.2)
        uuid = uuid_file.read_text()
        assert _steps(_json(prefect_server, uuid)) == [(0, 1.0)]
        folder = find_run_path(uuid)
        assert folder is not None
        metrics = folder / "outputs" / "tensorboard" / "metrics"
        events = EventAccumulator(str(metrics))
        deadline = time.monotonic() + 30  # the mirror reads the file each second
        while not metrics.is_dir() and time.monotonic() < deadline:
            time.sleep(0.2)  # its first pass makes the folder: TensorBoard reads none before
        while time.monotonic() < deadline:
            events.Reload()
            if "loss" in events.Tags()["scalars"]:
                break
            time.sleep(0.5)
        assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 1.0)]
    finally:
        go.touch()
        assert job.wait(timeout=120) == 0
    assert _steps(_json(prefect_server, "metrics-running")) == [(0, 1.0), (1, 0.5)]
