"""``restart`` and ``resume`` run real processes again from what a run recorded: a DAG from its
failed op (the ops before it reused, not run), a job with a new param and a copied directory,
a finished sweep with more trials. ``run`` is a CLI process on the test server (through its warm
runner); ``restart`` and ``resume`` run the CLI in this process; marker files the ops write
count what really ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prefect.conftest import cli_json, cli_json_in

PY = sys.executable
STEP = """\
import os, sys
from polyaxon_prefect import tracking
p = tracking.get_params()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "marks", p["name"] + ".log"), "a") as f:
    f.write(str(p.get("prev")) + "\\n")
if p["name"] == "c" and not os.path.exists(os.path.join(here, "marks", "ok")):
    sys.exit(3)
tracking.log_outputs(v=p["name"] + "<" + str(p.get("prev")))
"""
IGNORE_MARKS = "marks/\n"
"""The marks are what the ops write in their working folder, not their code (a restart reuses
an op only while its code hash is the same)."""
STEP_COMPONENT = f"""\
version: 1.1
kind: component
name: step
inputs:
- {{name: name, type: str}}
- {{name: prev, type: str, isOptional: true, value: start}}
outputs: [{{name: v, type: str}}]
run: {{kind: job, container: {{command: ["{PY}", step.py]}}}}
"""


def _chain() -> str:
    ops = []
    for index, name in enumerate("abcde"):
        params = f"name: {{value: {name}}}"
        if index:
            params += f", prev: {{ref: ops.{'abcde'[index - 1]}, value: outputs.v}}"
        ops.append(f"  - {{name: {name}, pathRef: step.yaml, params: {{{params}}}}}\n")
    return "version: 1.1\nkind: component\nname: chain\nrun:\n  kind: dag\n  operations:\n" + (
        "".join(ops)
    )


def _marks(folder: Path) -> dict[str, list[str]]:
    return {
        log.stem: log.read_text().splitlines() for log in sorted((folder / "marks").glob("*.log"))
    }


@pytest.mark.server
def test_restart_from_the_failed_op_reuses_the_ops_before_it(
    tmp_path: Path, prefect_server: str
) -> None:
    (tmp_path / "marks").mkdir()
    (tmp_path / ".polyaxonignore").write_text(IGNORE_MARKS)
    (tmp_path / "step.py").write_text(STEP)
    (tmp_path / "step.yaml").write_text(STEP_COMPONENT)
    (tmp_path / "chain.yaml").write_text(_chain())

    code, first, err = cli_json(prefect_server, tmp_path, "run", "-f", "chain.yaml")
    assert code == 1, err
    assert first["status"] == "failed"
    assert {n: op["status"] for n, op in first["ops"].items()} == {
        "a": "succeeded",
        "b": "succeeded",
        "c": "failed",
        "d": "upstream_failed",
        "e": "upstream_failed",
    }
    run_dir = Path(first["artifacts_path"])
    assert (run_dir / "polyaxonfile.yaml").is_file()
    assert json.loads((run_dir / "run.json").read_text())["kind"] == "dag"

    # the file is gone and the cause is fixed: the recorded operation runs again from `c`
    (tmp_path / "chain.yaml").unlink()
    (tmp_path / "step.yaml").unlink()
    (tmp_path / "marks" / "ok").write_text("")
    code, again, err = cli_json_in(prefect_server, tmp_path, "restart", first["uuid"])
    assert code == 0, err
    assert "from op `c`" in err
    assert again["status"] == "succeeded"
    assert again["uuid"] != first["uuid"]
    ops = again["ops"]
    assert all(op["status"] == "succeeded" for op in ops.values())
    assert [n for n, op in ops.items() if op.get("reused")] == ["a", "b"]
    assert ops["a"]["uuid"] == first["ops"]["a"]["uuid"]
    assert ops["b"]["message"] == f"reused from run {first['ops']['b']['uuid']}"
    # a and b ran once (the first run); c twice (failed, then with b's recorded output); d, e once
    assert _marks(tmp_path) == {
        "a": ["start"],
        "b": ["a<start"],
        "c": ["b<a<start", "b<a<start"],
        "d": ["c<b<a<start"],
        "e": ["d<c<b<a<start"],
    }
    new_record = json.loads((Path(again["artifacts_path"]) / "run.json").read_text())
    assert new_record["original_uuid"] == first["uuid"]
    assert new_record["cloning_kind"] == "restart"

    # by the flow run's id too, from an op named; an unknown op is one line, exit 2
    code, bad, err = cli_json_in(prefect_server, tmp_path, "restart", again["uuid"], "--from", "zz")
    assert code == 2
    assert "no op `zz`" in bad["error"]
    assert "Traceback" not in err
    code, third, err = cli_json_in(
        prefect_server, tmp_path, "restart", again["flow_run_id"], "--from", "d"
    )
    assert code == 0, err
    assert [n for n, op in third["ops"].items() if op.get("reused")] == ["a", "b", "c"]
    assert len(_marks(tmp_path)["d"]) == 2
    assert len(_marks(tmp_path)["c"]) == 2


@pytest.mark.server
def test_restart_a_job_with_params_a_preset_and_a_copy(tmp_path: Path, prefect_server: str) -> None:
    script = (
        "import os; from polyaxon_prefect import tracking; p = tracking.get_params(); "
        "d = os.environ['POLYAXON_PREFECT_RUN_ARTIFACTS_PATH']; "
        "open(os.path.join(d, 'x-' + str(p['x'])), 'w').close(); "
        "tracking.log_outputs(got=p['x'], label=p['tag'])"
    )
    (tmp_path / "job.yaml").write_text(
        "version: 1.1\nkind: component\nname: again\n"
        "inputs: [{name: x, type: int, value: 1, isOptional: true},"
        " {name: tag, type: str, value: plain, isOptional: true}]\n"
        "outputs: [{name: got, type: int}, {name: label, type: str}]\n"
        f'run: {{kind: job, container: {{command: ["{PY}", -c, "{script}"]}}}}\n'
    )
    (tmp_path / "override.yaml").write_text(
        "version: 1.1\nkind: operation\nparams: {tag: {value: patched}}\n"
    )
    code, first, err = cli_json(prefect_server, tmp_path, "run", "-f", "job.yaml", "-P", "x=2")
    assert code == 0, err
    (tmp_path / "job.yaml").write_text("not: [a polyaxonfile\n")  # edited since: no matter
    code, again, err = cli_json_in(prefect_server, tmp_path, "restart", first["uuid"], "--copy")
    assert code == 0, err
    assert again["outputs"] == {"got": 2, "label": "plain"}  # the recorded -P value
    new_dir = Path(again["artifacts_path"])
    assert (new_dir / "x-2").is_file()  # copied from the old run, then written again
    record = json.loads((new_dir / "run.json").read_text())
    assert (record["original_uuid"], record["cloning_kind"]) == (first["uuid"], "copy")
    code, third, err = cli_json_in(
        prefect_server, tmp_path, "restart", first["uuid"], "-P", "x=5", "-f", "override.yaml"
    )
    assert code == 0, err
    assert third["outputs"] == {"got": 5, "label": "patched"}
    assert not (Path(third["artifacts_path"]) / "x-2").exists()  # no --copy: a fresh directory
    code, refused, err = cli_json_in(prefect_server, tmp_path, "resume", first["uuid"])
    assert code == 2
    assert "restart" in refused["error"]


@pytest.mark.server
def test_resume_more_runs_exactly_the_extra_trials(tmp_path: Path, prefect_server: str) -> None:
    script = (
        "import os, uuid; from polyaxon_prefect import tracking; p = tracking.get_params(); "
        f"open(os.path.join('{tmp_path}', 'trials', uuid.uuid4().hex), 'w').close(); "
        "tracking.log_outputs(loss=float(p['lr']))"
    )
    (tmp_path / "trials").mkdir()
    (tmp_path / "sweep.yaml").write_text(
        "version: 1.1\nkind: operation\nname: more-sweep\n"
        "matrix:\n  kind: random\n  numRuns: 8\n  seed: 3\n  concurrency: 4\n"
        "  params: {lr: {kind: uniform, value: [0.0, 1.0]}}\n"
        "component:\n  name: more\n  inputs: [{name: lr, type: float}]\n"
        "  outputs: [{name: loss, type: float}]\n"
        f'  run: {{kind: job, container: {{command: ["{PY}", -c, "{script}"]}}}}\n'
    )
    code, first, err = cli_json(prefect_server, tmp_path, "run", "-f", "sweep.yaml")
    assert code == 0, err
    assert len(first["trials"]) == 8
    assert len(list((tmp_path / "trials").iterdir())) == 8
    code, more, err = cli_json_in(prefect_server, tmp_path, "resume", first["uuid"], "--more", "4")
    assert code == 0, err
    assert len(list((tmp_path / "trials").iterdir())) == 12  # exactly 4 new trials ran
    assert len(more["trials"]) == 12
    assert sorted(t["index"] for t in more["trials"]) == list(range(12))
    assert {t["status"] for t in more["trials"]} == {"succeeded"}
    old = {json.dumps(t["params"], sort_keys=True) for t in first["trials"]}
    new = {json.dumps(t["params"], sort_keys=True) for t in more["trials"]}
    assert old < new and len(new) == 12  # the 8 done trials kept, 4 new distinct points


@pytest.mark.server
def test_the_generic_deployment_form_restarts_from_an_op(tmp_path: Path) -> None:
    """``restart: {run, from}`` on the generic flow (the Prefect UI's form) is `restart --from`."""
    from polyaxon_prefect.prefect import run
    from polyaxon_prefect.prefect.deployments._deploy import generic_flow

    (tmp_path / "marks").mkdir()
    (tmp_path / ".polyaxonignore").write_text(IGNORE_MARKS)
    (tmp_path / "step.py").write_text(STEP)
    # another component than the first test's: its ops must not be served from the op cache
    (tmp_path / "step.yaml").write_text(STEP_COMPONENT.replace("name: step", "name: step-ui"))
    (tmp_path / "chain.yaml").write_text(_chain())
    first = run(tmp_path / "chain.yaml")
    assert first.status == "failed" and first.uuid is not None
    (tmp_path / "marks" / "ok").write_text("")

    state = generic_flow(restart={"run": first.uuid, "from": "c"}, return_state=True)
    assert state.is_completed(), state.message
    assert [len(lines) for lines in _marks(tmp_path).values()] == [1, 1, 2, 1, 1]
    with pytest.raises(Exception, match="takes"):
        generic_flow(restart={"ruin": first.uuid})


@pytest.mark.server
def test_resume_a_killed_sweep_by_its_run(tmp_path: Path, prefect_server: str) -> None:
    """SIGKILL mid-sweep, then `resume RUN`: the trial left running runs again, the finished one
    never, the rest run; the run is found by its recorded uuid (the sweep never reported)."""
    script = (
        "import os, time; from polyaxon_prefect import tracking; p = tracking.get_params(); "
        f"open(os.path.join('{tmp_path}', 'trials', str(p['x']) + '-' + str(time.time())), 'w')"
        ".close(); time.sleep(1.0); tracking.log_outputs(loss=float(p['x']))"
    )
    (tmp_path / "trials").mkdir()
    (tmp_path / "sweep.yaml").write_text(
        "version: 1.1\nkind: operation\nname: killed-sweep\n"
        "matrix:\n  kind: mapping\n  concurrency: 1\n"
        "  values: [{x: 1}, {x: 2}, {x: 3}, {x: 4}]\n"
        "component:\n  name: killed\n  inputs: [{name: x, type: int}]\n"
        "  outputs: [{name: loss, type: float}]\n"
        f'  run: {{kind: job, container: {{command: ["{PY}", -c, "{script}"]}}}}\n'
    )

    def started() -> list[str]:
        return sorted(p.name.split("-")[0] for p in (tmp_path / "trials").iterdir())

    process = subprocess.Popen(
        [PY, "-m", "polyaxon_prefect.cli", "run", "-f", "sweep.yaml"],
        cwd=tmp_path,
        # the run in the CLI's process: its whole process group is killed
        env={**os.environ, "PREFECT_API_URL": prefect_server, "POLYAXON_PREFECT_RUNNER": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while started() != ["1", "2"]:
            assert process.poll() is None and time.monotonic() < deadline, started()
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    root = Path(os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"])
    (record,) = [
        path
        for path in root.glob("*/*/run.json")
        if json.loads(path.read_text())["op"] == "killed-sweep"
    ]
    uuid = json.loads(record.read_text())["uuid"]

    code, resumed, err = cli_json_in(prefect_server, tmp_path, "resume", uuid)
    assert code == 0, err
    assert [t["status"] for t in resumed["trials"]] == ["succeeded"] * 4
    assert started() == ["1", "2", "2", "3", "4"]  # 1 done before the kill: never again
