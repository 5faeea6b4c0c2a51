"""A job trial replays ``termination.maxRetries`` itself (it runs without Prefect's engine)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect.sweep._trials import _with_retries
from polyaxon_prefect.runtime import PreparedJob, PrepareOptions, new_run_context, prepare_job

FLAKY = (
    "import pathlib, sys; marker = pathlib.Path(sys.argv[1]); count = int(marker.read_text() "
    "if marker.exists() else 0) + 1; marker.write_text(str(count)); "
    "sys.exit(0 if count >= int(sys.argv[2]) else 1)"
)


def _job(tmp_path: Path, succeed_on: int, max_retries: int) -> PreparedJob:
    argv = [sys.executable, "-c", FLAKY, str(tmp_path / "attempts"), str(succeed_on)]
    component = {
        "version": 1.1,
        "kind": "component",
        "name": "flaky",
        "termination": {"maxRetries": max_retries},
        "run": {"kind": "job", "container": {"command": argv}},
    }
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(json.dumps(component), encoding="utf-8")
    context = new_run_context("flaky", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    return prepare_job(load_polyaxonfile(path), PrepareOptions(run_context=context))


def _run(job: PreparedJob, cancel: threading.Event | None = None) -> tuple[str, list[tuple]]:
    told: list[tuple] = []
    result = _with_retries(job, lambda *_: None, cancel, lambda *args: told.append(args))
    return result.status, told


def test_a_failed_trial_is_retried_max_retries_times(tmp_path: Path) -> None:
    status, told = _run(_job(tmp_path, succeed_on=3, max_retries=2))
    assert status == "succeeded" and told == [(1, 3), (2, 3)]
    assert (tmp_path / "attempts").read_text() == "3"


def test_a_trial_failing_every_attempt_stops_after_the_last(tmp_path: Path) -> None:
    status, told = _run(_job(tmp_path, succeed_on=9, max_retries=1))
    assert status == "failed" and told == [(1, 2)]
    assert (tmp_path / "attempts").read_text() == "2"


def test_a_stopped_trial_is_not_retried(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    status, told = _run(_job(tmp_path, succeed_on=9, max_retries=3), cancel)
    assert status == "stopped" and told == []
