"""The run-kind seam: one registry says which kinds run where, and refuses the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import UnsupportedFeatureError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import EXECUTORS, create_run_context, executor_for


def test_a_job_runs_through_its_executor(tmp_path: Path) -> None:
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nrun:\n  kind: job\n  container: {command: [echo, hi]}\n",
        encoding="utf-8",
    )
    executor = executor_for("job")
    assert EXECUTORS[("job", "local")] is executor
    context = create_run_context("t", "proj", artifacts_root=tmp_path / "artifacts")
    prepared = executor.prepare(load_polyaxonfile(path), run_context=context, connections={})
    lines: list[str] = []
    result = executor.execute(prepared, on_line=lambda _stream, line: lines.append(line))
    assert result.status == "succeeded" and lines == ["hi"]


LOCAL_KINDS = (
    "`job` or `notifier` or `mpijob` or `mxjob` or `paddlejob` or `pytorchjob` or `tfjob` "
    "or `xgbjob`"
)


@pytest.mark.parametrize("kind", ["raycluster", "service", "dag", None])
def test_a_kind_with_no_local_executor_is_refused_with_a_hint(kind: str | None) -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        executor_for(kind)
    [problem] = info.value.problems
    assert (
        problem.message
        == f"run kind `{kind}` cannot run on the local runtime, only {LOCAL_KINDS} can"
    )
    assert problem.rule == "unsupported_kind" and problem.path == ("component", "run", "kind")
    assert problem.hint


def test_a_backend_with_no_executor_for_the_kind_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match="cannot run on the `kubeflow` backend"):
        executor_for("job", backend="kubeflow")
