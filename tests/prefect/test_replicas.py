"""Distributed ops on the local backend: real processes, one per replica, through `run`.

Each replica is a real process started by the replicas executor with its operator contract
(``RANK``/``WORLD_SIZE``, ``TF_CONFIG``, ``DMLC_*``): a gloo all-reduce across a master and two
workers, stdlib scripts checking the TF and MXNet variables, a failing worker that brings the
job down at once, and a distributed op inside a DAG and as a sweep's trial.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.prefect import run

SCRIPT = Path(__file__).with_name("replica_script.py")


def _command(*args: str) -> str:
    return json.dumps([sys.executable, str(SCRIPT), *args])


def write(folder: Path, name: str, body: str, *, outputs: str = "", inputs: str = "") -> Path:
    """A distributed component ``name`` whose ``run`` is ``body`` (YAML, kind included)."""
    text = (
        f"version: 1.1\nkind: component\nname: {name}\ntags: [tests, replicas]\n"
        + (f"inputs:\n{textwrap.dedent(inputs)}" if inputs else "")
        + (f"outputs:\n{textwrap.dedent(outputs)}" if outputs else "")
        + "run:\n"
        + textwrap.indent(textwrap.dedent(body), "  ")
    )
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _outputs(run_path: str, replica: str) -> dict[str, Any]:
    return json.loads(Path(run_path, "replicas", replica, "outputs", "outputs.json").read_text())


def test_pytorch_ddp_all_reduce_across_a_master_and_two_workers(tmp_path: Path, api: Any):
    pytest.importorskip("torch")
    command = _command("ddp")
    path = write(
        tmp_path,
        "ddp",
        f"""\
        kind: pytorchjob
        master: {{replicas: 1, container: {{command: {command}}}}}
        worker: {{replicas: 2, container: {{command: {command}}}}}
        """,
        outputs="- {name: total, type: float}\n- {name: rank, type: int}\n",
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    assert result.outputs == {"total": 6.0, "rank": 0}  # 1 + 2 + 3, the master's outputs
    assert _outputs(result.artifacts_path, "worker-1") == {"total": 6.0, "rank": 2}
    logs = Path(result.artifacts_path, "logs")
    assert sorted(p.name for p in logs.iterdir()) == [
        "master-0.log",
        "worker-0.log",
        "worker-1.log",
    ]
    assert "rank 1 of 3: 6.0" in (logs / "worker-0.log").read_text()
    prefect_logs = api.logs(result.flow_run_id)
    assert "[worker-1] rank 2 of 3: 6.0" in prefect_logs
    assert "[master-0] rank 0 of 3: 6.0" in prefect_logs


def test_tf_config_contract_and_the_ps_is_stopped_once_the_chief_succeeds(tmp_path: Path):
    command = _command("tf")
    path = write(
        tmp_path,
        "tf",
        f"""\
        kind: tfjob
        chief: {{container: {{command: {command}}}}}
        ps: {{replicas: 1, container: {{command: {command}}}}}
        worker: {{replicas: 2, container: {{command: {command}}}}}
        """,
        outputs="- {name: task, type: str}\n- {name: cluster, type: str}\n",
    )

    started = time.monotonic()
    result = run(path)

    assert result.status == "succeeded", result.message
    assert time.monotonic() - started < 30  # the ps sleeps 60 s: it was stopped
    assert result.outputs["task"] == "chief:0"
    assert json.loads(result.outputs["cluster"]) == {"chief": 1, "ps": 1, "worker": 2}
    assert _outputs(result.artifacts_path, "worker-1")["task"] == "worker:1"


def test_dmlc_contract_of_an_mxjob(tmp_path: Path):
    command = _command("mx")
    path = write(
        tmp_path,
        "mx",
        f"""\
        kind: mxjob
        scheduler: {{container: {{command: {command}}}}}
        server: {{replicas: 1, container: {{command: {command}}}}}
        worker: {{replicas: 2, container: {{command: {command}}}}}
        """,
        outputs="- {name: task, type: str}\n- {name: cluster, type: str}\n",
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    assert result.outputs["task"] == "scheduler/1/2/-"
    assert _outputs(result.artifacts_path, "worker-1")["task"] == "worker/1/2/1"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_failing_worker_brings_the_job_down_at_once_and_leaves_no_process(tmp_path: Path):
    marks = tmp_path / "marks"
    marks.mkdir()
    command = _command("fail", str(marks))
    path = write(
        tmp_path,
        "failing",
        f"""\
        kind: pytorchjob
        master: {{replicas: 1, container: {{command: {command}}}}}
        worker: {{replicas: 2, container: {{command: {command}}}}}
        """,
    )

    result = run(path)
    ended = time.time()

    assert result.status == "failed"
    assert "replica `worker-1` exited with code 3" in result.message
    assert "boom: worker 1 lost its data" in result.message
    assert ended - float((marks / "failed_at").read_text()) < 2.0
    pids = [int(p.read_text()) for p in marks.glob("pid-*")]
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


def test_a_distributed_op_in_a_dag_passes_its_main_replicas_output_on(tmp_path: Path):
    command = ["{{ python }}", str(SCRIPT), "echo", "{{ x }}"]
    replica = {"replicas": 1, "container": {"command": command}}
    trainer = {
        "inputs": [{"name": "x", "type": "float"}, {"name": "python", "type": "str"}],
        "outputs": [{"name": "loss", "type": "float"}],
        "run": {"kind": "pytorchjob", "master": replica, "worker": {**replica, "replicas": 2}},
    }
    echo = {
        "inputs": [{"name": "x", "type": "float"}, {"name": "python", "type": "str"}],
        "outputs": [{"name": "loss", "type": "float"}],
        "run": {"kind": "job", "container": {"command": command}},
    }
    python = {"value": sys.executable}
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": "replicas-dag",
        "run": {
            "kind": "dag",
            "operations": [
                {
                    "name": "train",
                    "params": {"x": {"value": 1.5}, "python": python},
                    "component": trainer,
                },
                {
                    "name": "after",
                    "params": {
                        "x": {"ref": "ops.train", "value": "outputs.loss"},
                        "python": python,
                    },
                    "component": echo,
                },
            ],
        },
    }
    path = tmp_path / "dag.yaml"
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")

    result = run(path)

    assert result.status == "succeeded", result.message
    assert result.ops["train"]["outputs"] == {"loss": 1.5}
    assert result.ops["after"]["outputs"] == {"loss": 1.5}


def test_a_distributed_op_as_a_sweep_trial(tmp_path: Path):
    command = _command("echo", "{{ x }}")
    write(
        tmp_path,
        "trial",
        f"""\
        kind: pytorchjob
        master: {{replicas: 1, container: {{command: {command}}}}}
        worker: {{replicas: 1, container: {{command: {command}}}}}
        """,
        inputs="- {name: x, type: float}\n",
        outputs="- {name: loss, type: float}\n",
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "version: 1.1\nkind: operation\nname: replica-sweep\n"
        "matrix:\n  kind: grid\n  params:\n    x: {kind: choice, value: [0.5, 2.0]}\n"
        "pathRef: trial.yaml\n",
        encoding="utf-8",
    )

    result = run(sweep)

    assert result.status == "succeeded", result.message
    assert [t["outputs"]["loss"] for t in result.trials] == [0.5, 2.0]
    assert all(t["status"] == "succeeded" for t in result.trials)


@pytest.mark.skipif(
    __import__("shutil").which("mpirun") is None,
    reason="needs Open MPI's mpirun (Debian: openmpi-bin; .ci/run installs it)",
)
def test_an_mpijob_launches_every_rank_through_a_real_mpirun(tmp_path: Path):
    """Open MPI's own ``mpirun`` over the hostfile of the two workers' slots starts both ranks
    (as root too: the launcher is told it may, as the MPI operator's images tell it)."""
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, pathlib\n"
        "rank, size = os.environ['OMPI_COMM_WORLD_RANK'], os.environ['OMPI_COMM_WORLD_SIZE']\n"
        "pathlib.Path(os.environ['OUT'], f'rank-{rank}').write_text(size)\n"
        "print(f'rank {rank} of {size}', flush=True)\n"
    )
    out = tmp_path / "ranks"
    out.mkdir()
    command = json.dumps(["mpirun", "-np", "2", sys.executable, str(script)])
    path = write(
        tmp_path,
        "mpi",
        f"""\
        kind: mpijob
        slotsPerWorker: 1
        launcher:
          replicas: 1
          container:
            command: {command}
            env: [{{name: OUT, value: "{out}"}}]
        worker: {{replicas: 2, container: {{command: [sleep, "1"]}}}}
        """,
    )

    result = run(path)

    assert result.status == "succeeded", result.message
    assert sorted(p.name for p in out.iterdir()) == ["rank-0", "rank-1"]
    assert {p.read_text() for p in out.iterdir()} == {"2"}
    hostfile = Path(result.artifacts_path, "replicas", "hostfile").read_text()
    assert hostfile.split() == ["127.0.0.1", "slots=2"]
