"""The v0 distributed helpers (``get_cluster_def``, ``get_task_info``, ``is_master``) inside the
replicas of a real ``pytorchjob`` (master + 2 workers, gloo): the compat packages reach every
replica, and what they report is the replica env the runtime gave it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.runtime import PrepareOptions, executor_for, new_run_context
from polyaxon_prefect.tracking import read_metrics_file

pytestmark = [pytest.mark.process, pytest.mark.slow]

SCRIPT = Path(__file__).parent / "frameworks" / "legacy_distributed.py"


def test_v0_helpers_in_pytorchjob_replicas(tmp_path: Path) -> None:
    shutil.copy(SCRIPT, tmp_path / SCRIPT.name)
    container = f"{{command: [python, {SCRIPT.name}]}}"
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: dist\nrun:\n  kind: pytorchjob\n"
        f"  master: {{replicas: 1, container: {container}}}\n"
        f"  worker: {{replicas: 2, container: {container}}}\n"
    )
    loaded = load_polyaxonfile(path)
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    executor = executor_for("pytorchjob")
    prepared = executor.prepare(loaded, PrepareOptions(run_context=context, connections={}))
    lines: list[str] = []
    result = executor.execute(prepared, on_line=lambda stream, line: lines.append(line))
    assert str(result.status) == "succeeded", (result.message, lines[-20:])
    reports = sorted(
        (json.loads(line[line.index("{") :]) for line in lines if '"task"' in line),
        key=lambda r: (r["task"]["type"], r["task"]["index"]),
    )
    assert [(r["task"]["type"], r["task"]["index"], r["master"]) for r in reports] == [
        ("master", 0, True),
        ("worker", 0, False),
        ("worker", 1, False),
    ]
    assert {r["sum"] for r in reports} == {6.0}, "1 + 2 + 3 over gloo"
    metrics = read_metrics_file(context.run_outputs_path / "metrics.jsonl")
    assert [(m["world"], m["sum"]) for m in metrics] == [(3, 6.0)], "the master logged once"
