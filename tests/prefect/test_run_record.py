"""One record shape: ``get --json`` of a run is what ``run --json`` printed for it, field for
field and type for type (numbers stay numbers, params keep their declared types, every metric
even one named like an output), for a job, a DAG and a sweep run by the CLI; a name several
runs have is their latest, with a note; ``ls`` shows a distributed run's own kind."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect.runs._runs import list_runs
from tests.prefect.conftest import cli_in, cli_on

PY = sys.executable
LEAF = (
    "from polyaxon_prefect import tracking; "
    "tracking.log_metrics(step=1, acc=0.7, loss=0.5); "
    "x = tracking.get_params()['x']; "
    "tracking.log_outputs(loss=round((x - 0.3) ** 2, 6))"
)
FILES = {
    "leaf.yaml": (
        "version: 1.1\nkind: component\nname: leaf\ninputs:\n"
        "- {name: x, type: float, value: 0.5, isOptional: true}\n"
        "- {name: n, type: int, value: 3, isOptional: true}\n"
        "- {name: flag, type: bool, value: true, isOptional: true}\n"
        "- {name: cfg, type: dict, value: {a: 1}, isOptional: true}\n"
        "- {name: word, type: str, value: '1.5', isOptional: true}\n"
        "outputs: [{name: loss, type: float}]\n"
        f'run: {{kind: job, container: {{command: ["{PY}", -c, "{LEAF}"]}}}}\n'
    ),
    "job.yaml": (
        "version: 1.1\nkind: operation\nname: record-job\nparams: {x: {value: 0.25}}\n"
        "pathRef: leaf.yaml\n"
    ),
    "dag.yaml": (
        "version: 1.1\nkind: component\nname: record-dag\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: first, pathRef: leaf.yaml, params: {x: {value: 0.1}}}\n"
        "  - {name: second, pathRef: leaf.yaml, dependencies: [first]}\n"
    ),
    "sweep.yaml": (
        "version: 1.1\nkind: operation\nname: record-sweep\n"
        "matrix:\n  kind: mapping\n  values: [{x: 0.2}, {x: 0.35}]\npathRef: leaf.yaml\n"
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("record")
    for name, text in FILES.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def _run_json(api: str, path: Path) -> dict[str, Any]:
    done = cli_on(api, "run", "-f", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _same(got: dict[str, Any], printed: dict[str, Any]) -> None:
    """Every field ``run --json`` printed is in ``get --json`` with the same value and type
    (bool is not int, 1.0 is not 1: compared through their JSON text)."""
    for key, value in printed.items():
        assert key in got, key
        assert json.dumps(got[key], sort_keys=True) == json.dumps(value, sort_keys=True), key


def test_get_json_of_a_job_is_its_run_json_and_a_name_is_its_latest_run(
    folder: Path, prefect_server: str
) -> None:
    earlier = run(folder / "job.yaml", cache=False)  # a first run of the same name
    printed = _run_json(prefect_server, folder / "job.yaml")
    assert printed["params"] == {"cfg": {"a": 1}, "flag": True, "n": 3, "word": "1.5", "x": 0.25}
    assert printed["outputs"] == {"loss": 0.0025}
    assert printed["metrics"] == {"acc": 0.7, "loss": 0.5}, "a metric named like an output"
    assert printed["kind"] == "job"

    got = cli_in(prefect_server, "get", "record-job", "--json")

    assert got.returncode == 0, got.stderr
    shown = json.loads(got.stdout)  # the note on stderr leaves stdout one JSON object
    _same(shown, printed)
    assert shown["uuid"] != earlier.uuid
    note = (
        f"1 other run is named record-job; the latest is {printed['uuid']} "
        "(ls -q name:record-job to see them)"
    )
    assert f"note: {note}\n" in got.stderr and shown["note"] == note


def test_get_json_of_a_dag_and_of_a_sweep_is_their_run_json(
    folder: Path, prefect_server: str
) -> None:
    for name, kind in (("dag", "dag"), ("sweep", "matrix")):
        printed = _run_json(prefect_server, folder / f"{name}.yaml")
        assert printed["kind"] == kind

        got = cli_in(prefect_server, "get", printed["flow_run_id"], "--json")

        assert got.returncode == 0, got.stderr
        _same(json.loads(got.stdout), printed)
    assert printed["trials"][0]["metrics"] == {"acc": 0.7, "loss": 0.5}


def test_ls_shows_a_distributed_runs_own_kind(tmp_path: Path, prefect_server: str) -> None:
    replica = f'{{replicas: 1, container: {{command: ["{PY}", -c, pass]}}}}'
    path = tmp_path / "record-ddp.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: record-ddp\n"
        f"run:\n  kind: pytorchjob\n  master: {replica}\n  worker: {replica}\n",
        encoding="utf-8",
    )
    result = run(path)
    assert result.status == "succeeded", result.message

    rows = {row["id"]: row for row in list_runs(prefect_server, limit=50)}

    assert rows[str(result.flow_run_id)]["kind"] == "pytorchjob"
