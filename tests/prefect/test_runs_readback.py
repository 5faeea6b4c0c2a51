"""``get`` and ``ls`` read runs back truthfully: a job, a DAG and a sweep really run on the test
server, then read with `get_run`/`list_runs` and with the CLI in a subprocess."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from uuid import UUID

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect.runs._runs import get_run, list_runs
from polyaxon_prefect.runtime._result import RunResult
from tests.prefect.conftest import cli_in

PY = sys.executable
LEAF = (
    "from polyaxon_prefect import tracking; "
    "tracking.log_metrics(step=1, acc=0.1); tracking.log_metrics(step=2, acc=0.7); "
    "x = float(tracking.get_params().get('x') or 0.5); "
    "tracking.log_outputs(loss=round((x - 0.3) ** 2, 6))"
)
FILES = {
    "leaf.yaml": (
        "version: 1.1\nkind: component\nname: leaf\n"
        "inputs: [{name: x, type: float, value: 0.5, isOptional: true}]\n"
        "outputs: [{name: loss, type: float}]\n"
        f'run: {{kind: job, container: {{command: ["{PY}", -c, "{LEAF}"]}}}}\n'
    ),
    "inner.yaml": (
        "version: 1.1\nkind: component\nname: inner\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: a, pathRef: leaf.yaml, params: {x: {value: 0.4}}}\n"
    ),
    "pipe.yaml": (
        "version: 1.1\nkind: component\nname: readback-pipe\nrun:\n  kind: dag\n  operations:\n"
        "  - {name: first, pathRef: leaf.yaml, params: {x: {value: 0.1}}}\n"
        "  - {name: nested, pathRef: inner.yaml, dependencies: [first]}\n"
    ),
    "sweep.yaml": (
        "version: 1.1\nkind: operation\nname: readback-sweep\n"
        "matrix:\n  kind: mapping\n  values: [{x: 0.2}, {x: 0.35}, {x: 0.9}]\n"
        "  earlyStopping:\n"
        "  - {kind: metric_early_stopping, metric: loss, value: -1, optimization: minimize}\n"
        "pathRef: leaf.yaml\n"
    ),
    "job.yaml": (
        "version: 1.1\nkind: operation\nname: readback-job\nparams: {x: {value: 0.25}}\n"
        "pathRef: leaf.yaml\n"
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> dict[str, RunResult]:
    """One job, one DAG with a nested DAG op and one sweep, each run once on the server."""
    folder = tmp_path_factory.mktemp("readback")
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    done = {kind: run(folder / f"{kind}.yaml") for kind in ("job", "pipe", "sweep")}
    for kind, result in done.items():
        assert result.status == "succeeded", (kind, result.message)
    return done


def test_get_job_has_last_metrics_and_is_found_by_polyaxon_uuid(
    runs: dict[str, RunResult], prefect_server: str
) -> None:
    job = runs["job"]
    got = get_run(prefect_server, str(job.flow_run_id))

    assert got is not None
    assert (got["kind"], got["status"], got["uuid"]) == ("job", "succeeded", job.uuid)
    assert got["metrics"] == {"acc": 0.7}, "the last value of each metric, as a number"
    assert got["artifacts_path"] == job.artifacts_path, "the run directory every RUN verb reads"
    assert got["params"]["x"] == 0.25 and got["outputs"] == {"loss": 0.0025}, "typed, as run"
    assert job.uuid is not None
    for ref in (job.uuid, str(UUID(job.uuid))):  # as `run` prints it, and dashed
        by_uuid = get_run(prefect_server, ref)
        assert by_uuid is not None and by_uuid["id"] == got["id"]
    assert get_run(prefect_server, "0" * 32) is None

    shown = cli_in(prefect_server, "get", job.uuid)
    assert shown.returncode == 0, shown.stderr
    assert f"uuid: {job.uuid}" in shown.stdout
    assert "metrics:\n  acc: 0.7\n" in shown.stdout


def test_get_dag_lists_its_ops_only_from_its_report(
    runs: dict[str, RunResult], prefect_server: str
) -> None:
    dag = runs["pipe"]
    got = get_run(prefect_server, str(dag.flow_run_id))

    assert got is not None and got["kind"] == "dag" and got["uuid"] == dag.uuid
    assert list(got["ops"]) == ["first", "nested"], "no Prefect subflow wrapper as an op"
    first, nested = got["ops"]["first"], got["ops"]["nested"]
    assert (first["status"], first["outputs"]) == ("succeeded", {"loss": 0.04})
    assert nested["status"] == "succeeded" and nested["ops"]["a"]["outputs"] == {"loss": 0.01}
    assert first["uuid"] == dag.ops["first"]["uuid"]  # type: ignore[index]

    shown = cli_in(prefect_server, "get", str(dag.flow_run_id))
    assert shown.returncode == 0, shown.stderr
    assert "ops:\n  first: succeeded  loss=0.04\n  nested: succeeded\n" in shown.stdout


def test_a_lagging_task_state_does_not_change_a_finished_dags_ops(
    runs: dict[str, RunResult], prefect_server: str
) -> None:
    """The server records task runs' states from events, behind the flow: a task run still
    reading Failed after the DAG succeeded must not make `get` say the op failed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Failed

    from polyaxon_prefect.prefect.runs._runs import _task_ops

    dag = runs["pipe"]
    with get_client(sync_client=True) as client:
        this = FlowRunFilter(id=FlowRunFilterId(any_=[UUID(str(dag.flow_run_id))]))
        tasks = client.read_task_runs(flow_run_filter=this)
        assert set(_task_ops(client, UUID(str(dag.flow_run_id)))) == {"first", "nested"}
        first = next(t for t in tasks if t.name == "first")
        client.set_task_run_state(first.id, Failed(message="a late event"), force=True)
        assert _task_ops(client, UUID(str(dag.flow_run_id)))["first"]["status"] == "failed"

    got = get_run(prefect_server, str(dag.flow_run_id))
    assert got is not None and got["ops"]["first"]["status"] == "succeeded"


def test_get_sweep_has_its_trials_and_best(runs: dict[str, RunResult], prefect_server: str):
    sweep = runs["sweep"]
    got = get_run(prefect_server, str(sweep.flow_run_id))

    assert got is not None and got["kind"] == "matrix" and got["uuid"] == sweep.uuid
    assert [(t["params"], t["status"], t["value"]) for t in got["trials"]] == [
        ({"x": 0.2}, "succeeded", 0.01),
        ({"x": 0.35}, "succeeded", 0.0025),
        ({"x": 0.9}, "succeeded", 0.36),
    ]
    assert got["trials"] == sweep.trials
    assert got["best"] == sweep.best and got["best"]["params"] == {"x": 0.35}
    assert got["outputs"] == {"loss": 0.0025}

    as_json = cli_in(prefect_server, "get", sweep.uuid or "", "--json")
    assert as_json.returncode == 0, as_json.stderr
    payload = json.loads(as_json.stdout)
    assert payload["trials"] == sweep.trials and payload["best"] == sweep.best
    shown = cli_in(prefect_server, "get", str(sweep.flow_run_id)).stdout
    assert re.search(r"^  1 +succeeded +0\.0025 +x=0\.35$", shown, re.M), shown
    assert "best: trial 1, loss = 0.0025\n  params: x=0.35\n" in shown


def test_a_name_several_runs_have_is_the_latest_with_a_note(
    tmp_path: Path, prefect_server: str
) -> None:
    (tmp_path / "twice.yaml").write_text(
        "version: 1.1\nkind: component\nname: readback-twice\n"
        "run: {kind: job, container: {command: [python, -c, pass]}}\n"
    )
    done = [run(tmp_path / "twice.yaml", cache=False) for _ in range(2)]

    got = get_run(prefect_server, "readback-twice")

    assert got is not None and got["id"] == str(done[1].flow_run_id)
    assert got["note"] == (
        f"1 other run is named readback-twice; the latest is {done[1].uuid} "
        "(ls -q name:readback-twice to see them)"
    )
    shown = cli_in(prefect_server, "get", "readback-twice")
    assert shown.returncode == 0, shown.stderr
    assert f"note: {got['note']}\n" in shown.stderr and f"uuid: {done[1].uuid}" in shown.stdout
    assert "Traceback" not in shown.stderr


def test_ls_shows_start_times_and_bounds_its_limit(
    runs: dict[str, RunResult], prefect_server: str
) -> None:
    rows = list_runs(prefect_server, limit=1000)
    by_id = {row["id"]: row for row in rows}
    for result in runs.values():
        row = by_id[str(result.flow_run_id)]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["started"])
    assert len(list_runs(prefect_server, limit=1)) == 1

    shown = cli_in(prefect_server, "ls", "--limit", "3")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["name", "kind", "status", "started", "duration", "id"]
    assert len(lines) == 4
    for bad, why in (("0", "from 1 to 1000, not 0"), ("1001", "not 1001"), ("x", "whole number")):
        refused = cli_in(prefect_server, "ls", "--limit", bad)
        assert refused.returncode == 2 and why in refused.stderr
        assert "Traceback" not in refused.stderr


def test_get_dag_says_which_op_failed_and_why(tmp_path: Path, prefect_server: str) -> None:
    (tmp_path / "bad.yaml").write_text(
        "version: 1.1\nkind: component\nname: bad\n"
        "run: {kind: job, container: {command: [python, -c, 'import sys; sys.exit(3)']}}\n"
    )
    (tmp_path / "dag.yaml").write_text(
        "version: 1.1\nkind: component\nname: readback-failing\nrun:\n  kind: dag\n"
        "  operations:\n  - {name: bad, pathRef: bad.yaml}\n"
        "  - {name: after, pathRef: bad.yaml, dependencies: [bad]}\n"
    )
    result = run(tmp_path / "dag.yaml")
    assert result.status == "failed"

    got = get_run(prefect_server, str(result.flow_run_id))
    assert got is not None and got["status"] == "failed"
    assert {name: op["status"] for name, op in got["ops"].items()} == {
        "bad": "failed",
        "after": "upstream_failed",
    }
    shown = cli_in(prefect_server, "get", str(result.flow_run_id)).stdout
    assert re.search(r"^  bad: failed  \(.*exited with code 3", shown, re.M), shown
