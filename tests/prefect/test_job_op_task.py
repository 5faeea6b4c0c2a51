"""A DAG's job op hands the DAG the `RunResult` its task reported, not a copy from the state."""

from __future__ import annotations

import threading
from pathlib import Path

from prefect.states import Failed

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.prefect._job_flow import JobOpTask
from polyaxon_prefect.runtime import PrepareOptions, RunContext, new_run_context, prepare_job
from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.specs import Status


def _op(tmp_path: Path) -> tuple[JobOpTask, RunContext]:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: op\nrun:\n  kind: job\n"
        "  container: {command: [echo]}\n",
        encoding="utf-8",
    )
    context = new_run_context("op", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    job = prepare_job(load_polyaxonfile(path), PrepareOptions(run_context=context))
    return JobOpTask(job, threading.Event()), context


def test_the_reported_result_is_the_one_handed_over(tmp_path: Path) -> None:
    op, context = _op(tmp_path)
    reported = RunResult(
        Status.FAILED, uuid=context.uuid, metrics={"loss": 1.5}, message="exited with code 3"
    )
    op.outcome = reported
    try:
        assert op.result(Failed(message="exited with code 3")) is reported
    finally:
        op.release()


def test_an_op_that_never_reported_is_read_from_its_state(tmp_path: Path) -> None:
    op, context = _op(tmp_path)
    try:
        result = op.result(Failed(message="the task run crashed"))
    finally:
        op.release()
    assert (result.status, result.message) == (Status.FAILED, "the task run crashed")
    assert result.uuid == context.uuid and result.metrics == {}
