"""Polyaxon's ``run`` flags on real runs: an ``-HP`` grid of 4 runs 4 trials (the files they
write, ``--json``'s trials), named and tagged as ``--name``/``--tags`` say in Prefect, with
``-w`` status lines and ``-l`` job lines; ``--url`` with a ``-f`` preset on top."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.prefect.conftest import read_flow_run, read_logs

JOB = """\
version: 1.1
kind: component
name: hp-job
tags: [base]
inputs: [{name: x, type: int}, {name: y, type: str}]
run:
  kind: job
  container:
    command: [sh, -c, 'echo "hello {{ x }}-{{ y }}"; echo done > trial-{{ x }}-{{ y }}.txt']
"""


def _cli(api: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PREFECT_API_URL": api},
        timeout=180,
        check=False,
    )


def _read_children(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])
            )
        )


def test_an_hp_grid_of_4_runs_4_trials_named_tagged_watched_and_logged(
    tmp_path: Path, prefect_server: str
) -> None:
    (tmp_path / "job.yaml").write_text(JOB, encoding="utf-8")
    done = _cli(
        prefect_server,
        tmp_path,
        "run",
        "-f",
        "job.yaml",
        "-HP",
        "x=choice:[1,2]",
        "-HP",
        "y=choice:[a,b]",
        "--matrix-kind",
        "grid",
        "--matrix-concurrency",
        "2",
        "--name",
        "hp-grid",
        "--description",
        "four trials",
        "--tags",
        "nightly, adhoc",
        "-w",
        "-l",
        "--json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)  # stdout is the one JSON object, -l lines went to stderr
    assert result["status"] == "succeeded"
    assert sorted((t["params"]["x"], t["params"]["y"]) for t in result["trials"]) == [
        (1, "a"),
        (1, "b"),
        (2, "a"),
        (2, "b"),
    ]
    assert {t["status"] for t in result["trials"]} == {"succeeded"}
    assert sorted(p.name for p in tmp_path.glob("trial-*.txt")) == [
        "trial-1-a.txt",
        "trial-1-b.txt",
        "trial-2-a.txt",
        "trial-2-b.txt",
    ]
    assert result["name"] == "hp-grid"
    assert result["description"] == "four trials"
    assert result["tags"] == ["base", "nightly", "adhoc"]

    # Prefect shows the name and the tags: the sweep's flow run and each trial's
    sweep = read_flow_run(result["flow_run_id"])
    assert sweep.name == "hp-grid"
    assert {"base", "nightly", "adhoc"} <= set(sweep.tags)
    trials = _read_children(result["flow_run_id"])
    assert len(trials) == 4
    assert all({"nightly", "adhoc"} <= set(trial.tags) for trial in trials)

    # -l: every job line, once, prefixed with its trial's run name
    job_lines = re.findall(r"^\[(trial-\d[^\]]*)\] hello (\d-\w)$", done.stderr, re.MULTILINE)
    assert sorted(value for _, value in job_lines) == ["1-a", "1-b", "2-a", "2-b"]
    # -w: one line per change, ending with the sweep's and every trial's final status
    watched = re.findall(r"^\d\d:\d\d:\d\d (.+): (\w+)$", done.stderr, re.MULTILINE)
    assert ("hp-grid", "running") in watched
    assert ("hp-grid", "succeeded") in watched
    assert len(watched) == len(set(watched))
    assert (
        sum(1 for name, status in watched if name.startswith("trial-") and status == "succeeded")
        == 4
    )


def test_log_prints_a_jobs_lines_once_on_stdout_before_the_summary(
    tmp_path: Path, prefect_server: str
) -> None:
    (tmp_path / "job.yaml").write_text(JOB, encoding="utf-8")
    done = _cli(prefect_server, tmp_path, "run", "-f", "job.yaml", "-P", "x=3", "-P", "y=z", "-l")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "hello 3-z"  # as the job printed it: no prefix, no Prefect decoration
    assert "status: succeeded" in lines
    assert "tags: base" in lines
    # shown once: Prefect's console does not echo it again, and the API still has it
    assert "hello 3-z" not in done.stderr
    [flow_run_id] = [line.split(": ")[1] for line in lines if line.startswith("prefect flow run:")]
    assert "hello 3-z" in read_logs(flow_run_id)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    site = tmp_path / "site"
    (site / "jobs").mkdir(parents=True)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield site, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_url_file_with_a_relative_path_ref_and_a_local_preset(
    tmp_path: Path, served: tuple[Path, str], prefect_server: str
) -> None:
    """The URL's ``pathRef`` is fetched from next to the URL (nothing of that name is on the
    local disk); the ``-f`` is a preset on top of it; the job runs in the current directory."""
    site, origin = served
    (site / "jobs" / "job.yaml").write_text(JOB, encoding="utf-8")
    (site / "jobs" / "op.yaml").write_text(
        "version: 1.1\nkind: operation\npathRef: job.yaml\nparams: {x: {value: 1}}\n",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "preset.yaml").write_text(
        "isPreset: true\nparams: {y: {value: from-preset}}\n", encoding="utf-8"
    )
    done = _cli(prefect_server, work, "run", "--url", f"{origin}/jobs/op.yaml", "-f", "preset.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / "trial-1-from-preset.txt").is_file()
