"""A grid stopped with Ctrl-C (a real CLI, SIGINT) ends ``stopped`` saying what is left, and
``--resume`` runs every point it left, cut-short ones included, each to one success; the study,
read back by Optuna, holds each point COMPLETE with its params; a metric-less sweep's end lines
and ``get`` show each trial's outputs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import optuna
from optuna.trial import TrialState

from polyaxon_prefect.prefect import run

sys.path.insert(0, str(Path(__file__).parent))
from conftest import cli_in, wait_until
from test_sweep import marks, sweep_file

XS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
MATRIX = """\
kind: grid
concurrency: 2
params:
  x: {kind: choice, value: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}
"""


def test_a_grid_stopped_with_ctrl_c_ends_stopped_and_resumes_every_point_once(
    tmp_path: Path, prefect_server: str
) -> None:
    path = sweep_file(tmp_path, MATRIX, params="sleep: {value: 1.5}\n")
    storage = str(tmp_path / "study.journal")
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "polyaxon_prefect.cli",
            "run",
            "-f",
            str(path),
            "--storage",
            storage,
        ],
        env={**os.environ, "PREFECT_API_URL": prefect_server},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # two points done and two more started: the stop cuts those two short
    assert wait_until(
        lambda: (
            (sum("end" in m for m in marks(tmp_path)) >= 2 and len(marks(tmp_path)) >= 4)
            or cli.poll() is not None
        ),
        120,
    )
    assert cli.poll() is None, cli.communicate()
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=60)

    assert cli.returncode == 130, err
    assert "status: stopped" in out, out
    ended = {m["params"]["x"] for m in marks(tmp_path) if "end" in m}
    left = 6 - len(ended)
    assert f"{left} of 6 points not run; run again with --resume" in out, out
    # no metric: each succeeded trial's line shows its outputs (loss = (x - 0.3) ** 2)
    for x in ended:
        line = re.search(rf"^  trial \d+\s+succeeded\s+x={x}  -> (.*)$", out, re.M)
        assert line and f"loss={(x - 0.3) ** 2:.6g}" in line[1], out

    result = run(path, resume=True, storage=storage)

    assert result.status == "succeeded", result.message
    assert [t["params"]["x"] for t in result.trials or []] == XS
    assert all(t["status"] == "succeeded" for t in result.trials or [])
    finished = Counter(m["params"]["x"] for m in marks(tmp_path) if "end" in m)
    assert finished == Counter(XS), finished  # every point succeeded exactly once
    cut_short = {m["params"]["x"] for m in marks(tmp_path) if "end" not in m}
    assert cut_short, "the stop cut no trial short"
    # the study as optuna-dashboard reads it: each point COMPLETE once, with its params; the
    # attempts the stop cut short PRUNED
    trials = _study_trials(storage)
    complete = [t.params["x"] for t in trials if t.state == TrialState.COMPLETE]
    assert sorted(complete) == XS, [(t.state, t.params) for t in trials]
    pruned = {t.params["x"] for t in trials if t.state == TrialState.PRUNED}
    assert pruned == cut_short
    assert not [t for t in trials if t.state in (TrialState.FAIL, TrialState.RUNNING)]

    shown = cli_in(prefect_server, "get", str(result.flow_run_id))
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^  trial +status +params +results$", shown.stdout, re.M), shown.stdout
    for x in XS:
        assert re.search(rf"^  \d +succeeded +x={x} +loss={(x - 0.3) ** 2}", shown.stdout, re.M)


def _study_trials(storage: str) -> list[optuna.trial.FrozenTrial]:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    backend = JournalStorage(JournalFileBackend(storage))
    [summary] = optuna.get_all_study_summaries(backend)
    return optuna.load_study(study_name=summary.study_name, storage=backend).get_trials()
