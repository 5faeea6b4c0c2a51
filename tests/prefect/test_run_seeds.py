"""The ``polyaxon run`` lines of Polyaxon's docs (the quick-start tutorial and the mapping page),
run as written with only the program's name changed (``polyaxon`` -> ``polyaxon-prefect``, here
``python -m polyaxon_prefect.cli``), on the folder's Prefect server.

There is no internet in the test: the quick-start files are served by a loopback HTTP server,
and each ``--url`` has only its origin rewritten (``https://raw.githubusercontent.com`` ->
``http://127.0.0.1:PORT``), the path kept. What is served at those paths is the corrected
quick-start this repo ships (examples/quick-start: the docs' own files are invalid YAML, see
their headers), laid out as in the quick-start repository; the same folder is the current
directory, as after ``git clone``, so ``-f optimization/mapping.yaml`` runs from it too.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

GITHUB_RAW = "https://raw.githubusercontent.com"
REPO_PATH = "polyaxon/polyaxon-quick-start/master"

GRID = (
    "polyaxon run --url https://raw.githubusercontent.com/polyaxon/polyaxon-quick-start/master/"
    "automation/hyperparams_grid.yml"
)
DAG = (
    "polyaxon run --url https://raw.githubusercontent.com/polyaxon/polyaxon-quick-start/master/"
    "automation/dag.yml -P loss=0.002 -P top=10"
)
MAPPING_URL = (
    "polyaxon run --eager --url https://raw.githubusercontent.com/polyaxon/polyaxon-quick-start/"
    "master/optimization/mapping.yaml"
)
MAPPING_FILE = "polyaxon run --eager -f optimization/mapping.yaml"

QUICK = EXAMPLES / "quick-start"
LAYOUT = {
    "automation/hyperparams_grid.yml": "hyperparams_grid.yaml",
    "automation/dag.yml": "dag.yaml",
    "automation/typed.yaml": "typed.yaml",
    "optimization/mapping.yaml": "mapping.yaml",
    "optimization/typed.yaml": "typed.yaml",
    "optimization/model.py": "model.py",  # a job of a -f file runs in that file's folder
    "model.py": "model.py",  # a job of a --url file runs in the current directory
}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The clone (the served tree's ``polyaxon/polyaxon-quick-start/master``) and the origin
    that stands for raw.githubusercontent.com."""
    root = tmp_path_factory.mktemp("raw")
    clone = root / REPO_PATH
    for target, source in LAYOUT.items():
        (clone / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(QUICK / source, clone / target)
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield clone, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _run_seed(
    line: str, quick_start: tuple[Path, str], api: str, *, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    clone, origin = quick_start
    program, *args = shlex.split(line)
    assert program == "polyaxon"
    args = [arg.replace(GITHUB_RAW, origin) for arg in args]
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        cwd=clone,
        env={**os.environ, "PREFECT_API_URL": api},
        timeout=timeout,
        check=False,
    )


def _trials(stdout: str) -> list[tuple[str, str]]:
    """``(index, status)`` of each ``trial N  status  ...`` row of the summary."""
    return re.findall(r"^  trial (\d+)\s+(\w+)", stdout, flags=re.MULTILINE)


def test_the_dag_line_gets_the_did_you_mean_for_its_loss_typo(
    quick_start: tuple[Path, str], prefect_server: str
) -> None:
    """``loss`` is no input of the quick-start DAG (``max_loss`` is): one located problem."""
    done = _run_seed(DAG, quick_start, prefect_server, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "1 problem found.", done.stderr
    [problem] = [line for line in lines if "loss" in line]
    assert problem.startswith("-P: params.loss: received unexpected param `loss`")
    assert "did you mean `max_loss`?" in problem
    assert done.stdout == ""


@pytest.mark.parametrize("line", [MAPPING_URL, MAPPING_FILE], ids=["url", "file"])
def test_the_eager_mapping_lines_run_their_two_trials(
    line: str, quick_start: tuple[Path, str], prefect_server: str
) -> None:
    done = _run_seed(line, quick_start, prefect_server)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--eager changes nothing here" in done.stderr
    assert "status: succeeded" in done.stdout
    assert _trials(done.stdout) == [("0", "succeeded"), ("1", "succeeded")]
    # the real model trained, 5 epochs in each trial (its lines, shown as the run's log)
    assert len(re.findall(r"epoch 5/5: loss=[0-9.]+", done.stderr)) == 2


def test_the_grid_line_runs_the_whole_grid_from_the_url(
    quick_start: tuple[Path, str], prefect_server: str
) -> None:
    """5 learning rates x 2 dropouts x 2 activations x 2 epoch counts: 40 trials of the real
    model (about half a second each), two at a time; its ``pathRef: typed.yaml`` is fetched
    from next to the URL."""
    done = _run_seed(GRID, quick_start, prefect_server, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    trials = _trials(done.stdout)
    assert len(trials) == 40
    assert {status for _, status in trials} == {"succeeded"}
