"""The run-kind seam: one registry says which kinds run where, and refuses the others loudly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import UnsupportedFeatureError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import (
    EXECUTORS,
    PrepareOptions,
    executor_for,
    new_run_context,
)
from polyaxon_prefect.runtime._executors import (
    JobExecutor,
    ReplicasExecutor,
    register_executor,
    runnable_kinds,
)


def _job_file(tmp_path: Path, kind: str = "job") -> Path:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        f"version: 1.1\nkind: component\nrun:\n  kind: {kind}\n"
        "  container: {command: [echo, hi]}\n",
        encoding="utf-8",
    )
    return path


def test_a_job_runs_through_its_executor(tmp_path: Path) -> None:
    path = _job_file(tmp_path)
    executor = executor_for("job")
    assert EXECUTORS[("job", "local")] is executor
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    options = PrepareOptions(run_context=context, connections={})
    prepared = executor.prepare(load_polyaxonfile(path), options)
    lines: list[str] = []
    result = executor.execute(prepared, on_line=lambda _stream, line: lines.append(line))
    assert result.status == "succeeded" and lines == ["hi"]


@pytest.mark.parametrize("kind", ["raycluster", "cleaner", "dag", None])
def test_a_kind_with_no_local_executor_is_refused_with_a_hint(kind: str | None) -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        executor_for(kind)
    [problem] = info.value.problems
    assert problem.message.startswith(f"run kind `{kind}` cannot run on the local runtime, only ")
    for runnable in runnable_kinds():
        assert f"`{runnable}`" in problem.message
    assert problem.rule == "unsupported_kind" and problem.path == ("component", "run", "kind")
    assert problem.hint


def test_the_runnable_kinds_are_the_registered_ones() -> None:
    assert set(runnable_kinds()) == {kind for kind, backend in EXECUTORS if backend == "local"}
    assert {"job", "notifier", "tfjob", "pytorchjob", "mpijob"} <= set(runnable_kinds())


def test_a_backend_with_no_executor_for_the_kind_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match="cannot run on the `kubeflow` backend"):
        executor_for("notifier", backend="kubeflow")


def test_what_an_executor_prepares_is_stamped_with_its_kind_and_backend(tmp_path: Path) -> None:
    """A notifier is prepared by the job's functions, yet says `notifier`: whoever runs it
    finds the notifier's executor, never a default one."""
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    loaded = load_polyaxonfile(_job_file(tmp_path, "notifier"))
    prepared = executor_for("notifier").prepare(loaded, PrepareOptions(run_context=context))
    assert (prepared.run_kind, prepared.backend) == ("notifier", "local")


def test_an_executor_refuses_what_another_kind_prepared(tmp_path: Path) -> None:
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    loaded = load_polyaxonfile(_job_file(tmp_path))
    prepared = executor_for("job").prepare(loaded, PrepareOptions(run_context=context))
    with pytest.raises(ValueError, match="cannot run as `tfjob` on `local`"):
        executor_for("tfjob").execute(dataclasses.replace(prepared, run_kind="job"))


def test_registering_a_second_executor_for_a_pair_is_refused() -> None:
    register_executor("job", "local", JobExecutor)  # the same one again: nothing changes
    with pytest.raises(ValueError, match="already has an executor on `local`"):
        register_executor("job", "local", ReplicasExecutor)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown backend 'moon'"):
        register_executor("job", "moon", JobExecutor)


@pytest.mark.process  # a second Python, to see its fresh sys.modules
def test_a_local_request_does_not_load_the_kubernetes_executors() -> None:
    code = (
        "import sys; from polyaxon_prefect.prefect import _dispatch; "
        "_dispatch.register_backends('local'); "
        "print('polyaxon_prefect.prefect.kubernetes._kubernetes' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_the_kubernetes_executors_are_registered_by_an_explicit_call() -> None:
    """Not by importing a module; `mpijob` needs the operator's launcher, so it is not
    registered on the native backend at all (rather than registered, then refused)."""
    from polyaxon_prefect.prefect._dispatch import register_backends

    register_backends("local")
    register_backends("native")
    register_backends("native")  # again: nothing changes
    assert ("tfjob", "native") in EXECUTORS and ("mpijob", "kubeflow") in EXECUTORS
    assert ("mpijob", "native") not in EXECUTORS
    with pytest.raises(UnsupportedFeatureError, match="run kind `mpijob` cannot run on the"):
        executor_for("mpijob", "native")


def test_a_kind_with_no_executor_is_located_in_the_file(tmp_path: Path) -> None:
    """The refusal points at the line of `kind:`, like every other problem of the file."""
    from polyaxon_prefect.prefect._request import OpRequest

    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nrun:\n  kind: cleaner\n  container: {command: [echo]}\n",
        encoding="utf-8",
    )
    with pytest.raises(UnsupportedFeatureError) as info:
        OpRequest(load_polyaxonfile(path)).prepare_job()
    [problem] = info.value.problems
    assert problem.rule == "unsupported_kind"
    assert (problem.file, problem.line) == (str(path), 4)
    assert problem.format().startswith(f"{path}:4:")
