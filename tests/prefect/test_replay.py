"""Replays: the same op run again on the same Prefect database, Optuna storage and artifacts
root reports the same truth. A failure stays a failure; only a succeeded run is ever a cache hit.

Every test runs its op several times against the session's one Prefect server (a persistent
database for the whole session) and one artifacts root, with the cache on (as inside a DAG).
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.client.schemas.objects import StateType

from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect._dag import stop_op

PY = sys.executable
REPLAYS = 3


def job(code: str, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"run": {"kind": "job", "container": {"command": [PY, "-c", code]}, **(extra or {})}}


def component_file(folder: Path, name: str, body: dict[str, Any], **top: Any) -> Path:
    spec = {"version": 1.1, "kind": "component", "name": name, **top, **body}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def dag_file(
    folder: Path, name: str, ops: list[dict[str, Any]], comps: list[dict[str, Any]]
) -> Path:
    run_section = {"kind": "dag", "operations": ops, "components": comps}
    return component_file(folder, name, {"run": run_section})


FAIL = "import sys; sys.exit(1)"
OK = "pass"
SLEEP = "import time; time.sleep(30)"

# (status, component body, options for `run`): the terminal statuses of a standalone job.
STANDALONE = {
    "failed": job(FAIL),
    "timed-out": job(SLEEP, extra={}) | {"termination": {"timeout": 1}},
    "skipped-build": {
        "inputs": [{"name": "destination", "type": "image", "value": "repo/img"}],
        "run": {
            "kind": "job",
            "init": [{"dockerfile": {"image": "python:3.11"}}],
            "container": {"command": [PY, "-c", OK]},
        },
    },
}


@pytest.mark.parametrize("case", sorted(STANDALONE))
def test_standalone_job_with_cache_on_never_replays_a_non_success(case: str, tmp_path: Path):
    body = STANDALONE[case]
    path = component_file(tmp_path, f"replay-{case}", body, cache={"disable": False})
    expected = {"failed": "failed", "timed-out": "failed", "skipped-build": "skipped"}[case]

    results = [run(path, skip_builds=True) for _ in range(REPLAYS)]

    assert [r.status for r in results] == [expected] * REPLAYS
    assert not any(r.cached for r in results)
    assert len({r.uuid for r in results}) == REPLAYS  # every replay is a new run


def test_the_issue_dag_stays_failed_on_every_replay(tmp_path: Path, api: Any):
    path = dag_file(
        tmp_path,
        "replay-dag",
        [
            {"name": "bad1", "dagRef": "fail"},
            {"name": "after", "dagRef": "noop", "dependencies": ["bad1"]},
        ],
        [{"name": "fail", **job(FAIL)}, {"name": "noop", **job(OK)}],
    )

    for _ in range(REPLAYS):
        result = run(path)

        assert result.status == "failed"
        assert result.ops["bad1"]["status"] == "failed"
        assert result.ops["after"]["status"] == "upstream_failed"
        assert "cache hit" not in (result.ops["bad1"].get("message") or "")
        assert api.flow_run(result.flow_run_id).state.type == StateType.FAILED
        names = {t.name: t.state for t in api.task_runs(result.flow_run_id)}
        assert names["bad1"].name != "Cached"


def test_dag_ops_timed_out_and_stopped_are_never_cached(tmp_path: Path):
    path = dag_file(
        tmp_path,
        "replay-stops",
        [
            {"name": "slow", "dagRef": "sleeper", "termination": {"timeout": 1}},
            {"name": "held", "dagRef": "sleeper"},
            {"name": "after", "dagRef": "noop", "dependencies": ["held"], "trigger": "all_done"},
        ],
        [{"name": "sleeper", **job(SLEEP)}, {"name": "noop", **job(OK)}],
    )

    for _ in range(REPLAYS):
        stopper = threading.Thread(target=_stop_when_running, args=("held",), daemon=True)
        stopper.start()
        result = run(path)
        stopper.join(timeout=30)

        assert result.ops["slow"]["status"] == "failed"
        assert "timed out" in result.ops["slow"]["message"]
        assert result.ops["held"]["status"] == "stopped"
        assert result.ops["after"]["status"] == "succeeded"
        assert result.status == "failed"


def _stop_when_running(name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(1.5)
        if stop_op(name):
            return


def _not_code(folder: Path, counter: Path) -> None:
    """The counter an op writes next to its Polyaxonfile is its output, not its code (the op
    cache hashes the working folder's files): listed in the folder's ``.polyaxonignore``."""
    (folder / ".polyaxonignore").write_text(counter.name + "\n")


def test_a_flaky_op_is_cached_from_its_success_only(tmp_path: Path):
    """Fails on its first start, succeeds after: the failure is never reused; the success is."""
    counter = tmp_path / "starts"
    _not_code(tmp_path, counter)
    code = textwrap.dedent(
        f"""
        import pathlib, sys
        from polyaxon_prefect import tracking
        p = pathlib.Path({str(counter)!r})
        n = len(p.read_text().splitlines()) if p.exists() else 0
        p.write_text(p.read_text() + "x\\n" if p.exists() else "x\\n")
        if n == 0:
            sys.exit(2)
        tracking.log_outputs(loss=float(n))
        """
    )
    body = job(code) | {"outputs": [{"name": "loss", "type": "float"}]}
    path = dag_file(
        tmp_path,
        "replay-flaky",
        [{"name": "flaky", "dagRef": "flaky"}],
        [{"name": "flaky", **body}],
    )

    first, second, third, fourth = (run(path) for _ in range(4))

    assert first.ops["flaky"]["status"] == "failed" and first.status == "failed"
    assert second.ops["flaky"]["status"] == "succeeded"
    assert second.ops["flaky"]["outputs"] == {"loss": 1.0}
    assert "cache hit" not in second.ops["flaky"]["message"]
    for replay in (third, fourth):
        assert replay.status == "succeeded"
        assert replay.ops["flaky"]["outputs"] == {"loss": 1.0}
        assert replay.ops["flaky"]["uuid"] == second.ops["flaky"]["uuid"]
        assert "cache hit" in replay.ops["flaky"]["message"]
    assert counter.read_text().count("x") == 2  # the hits started no process


def test_a_cache_hit_after_its_ttl_runs_again(tmp_path: Path):
    counter = tmp_path / "starts"
    _not_code(tmp_path, counter)
    code = f"open({str(counter)!r}, 'a').write('x')"
    # 4 s: the hit must come within the TTL even when the first run's end waits out Prefect's
    # client back-off (2 s) on a busy server's answer
    path = component_file(tmp_path, "replay-ttl", job(code), cache={"disable": False, "ttl": 4})

    first = run(path)
    hit = run(path)
    time.sleep(4.5)
    after_ttl = run(path)

    assert [first.cached, hit.cached, after_ttl.cached] == [False, True, False]
    assert hit.uuid == first.uuid and after_ttl.uuid != first.uuid
    assert counter.read_text() == "xx"


def test_a_cache_hit_whose_run_directory_is_gone_runs_again(tmp_path: Path):
    import shutil

    path = component_file(tmp_path, "replay-gone", job(OK), cache={"disable": False})

    first = run(path)
    shutil.rmtree(first.artifacts_path)
    again = run(path)

    assert first.status == again.status == "succeeded"
    assert not again.cached and again.uuid != first.uuid


TRIAL_CODE = (
    "import sys; from polyaxon_prefect import tracking; x = int(sys.argv[1]); "
    "sys.exit(1) if x == 2 else tracking.log_outputs(loss=float(x))"
)
SWEEP_TRIAL = f"""\
version: 1.1
kind: component
name: replay-trial
inputs:
- {{name: x, type: int}}
outputs:
- {{name: loss, type: float}}
run:
  kind: job
  container:
    command: [{PY}, -c, "{TRIAL_CODE}", "{{{{ x }}}}"]
"""


def test_sweep_trials_keep_their_statuses_on_rerun_and_resume(tmp_path: Path):
    (tmp_path / "trial.yaml").write_text(SWEEP_TRIAL, encoding="utf-8")
    path = tmp_path / "replay-sweep.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: replay-sweep\n"
        "matrix:\n  kind: grid\n  concurrency: 2\n  params:\n"
        "    x: {kind: choice, value: [1, 2, 3]}\n"
        "pathRef: trial.yaml\n",
        encoding="utf-8",
    )
    storage = str(tmp_path / "study.journal")

    def statuses(result: Any) -> dict[int, str]:
        return {t["params"]["x"]: t["status"] for t in result.trials}

    runs = [run(path, storage=storage) for _ in range(2)]
    resumed = run(path, storage=storage, resume=True)

    for result in [*runs, resumed]:
        assert statuses(result) == {1: "succeeded", 2: "failed", 3: "succeeded"}
        assert result.status == "failed"
