"""Cache control and the end lines of `polyaxon-prefect run`.

A DAG's ops are cached by default (Polyaxon's rule), so a second run of the same DAG reuses
the first's outputs. These tests drive the real CLI (a subprocess against the session's test
server) and the Python API: ``--no-cache`` / ``cache=False`` run every op's process again and
record the fresh successes; an op with ``cache: {disable: true}`` always runs; a hit is said
in the live table, in the end lines and in the op's table artifact; the end lines show each
op's outputs and each sweep trial's params and objective value.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from polyaxon_prefect.prefect import run
from polyaxon_prefect.prefect.watch._live import LiveTable

PY = sys.executable
CLI = [PY, "-m", "polyaxon_prefect.cli", "run"]


def _cli(args: list[str], api_url: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PREFECT_API_URL"] = api_url  # the session's test server: no ephemeral start
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env, timeout=180, check=False
    )


def _counting_job(counter: Path, outputs: str) -> dict[str, Any]:
    """A job that appends one ``x`` to ``counter`` per start and logs ``outputs``."""
    code = (
        f"open({str(counter)!r}, 'a').write('x'); "
        f"from polyaxon_prefect import tracking; tracking.log_outputs({outputs})"
    )
    return {"run": {"kind": "job", "container": {"command": [PY, "-c", code]}}}


def _dag(folder: Path, name: str) -> Path:
    """``train`` (cached by default, as in any DAG) then ``report`` (``cache.disable``)."""
    train = _counting_job(folder / "train-starts", "loss=0.1234567891, accuracy=0.93")
    train["outputs"] = [{"name": "loss", "type": "float"}, {"name": "accuracy", "type": "float"}]
    report = _counting_job(folder / "report-starts", "rows=3")
    report["outputs"] = [{"name": "rows", "type": "int"}]
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": name,
        "run": {
            "kind": "dag",
            "operations": [
                {"name": "train", "dagRef": "train"},
                {
                    "name": "report",
                    "dagRef": "report",
                    "dependencies": ["train"],
                    "cache": {"disable": True},
                },
            ],
            "components": [{"name": "train", **train}, {"name": "report", **report}],
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    # the counters are the ops' output in their working folder: not their code
    (folder / ".polyaxonignore").write_text("*-starts\n", encoding="utf-8")
    return path


def _starts(folder: Path, op: str) -> int:
    return (folder / f"{op}-starts").read_text().count("x")


def _op_line(stdout: str, op: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.startswith(f"  {op} ")]
    return line


def test_no_cache_runs_every_op_records_it_and_hits_are_said(
    tmp_path: Path, prefect_server: str, api: Any
):
    path = _dag(tmp_path, "cache-control-dag")

    first = _cli(["-f", str(path), "--json"], prefect_server)
    assert first.returncode == 0, first.stderr
    first_uuid = json.loads(first.stdout)["ops"]["train"]["uuid"]

    hit = _cli(["-f", str(path), "--live"], prefect_server)  # text end lines, live table
    assert hit.returncode == 0, hit.stderr
    assert re.fullmatch(
        rf"  train\s+succeeded \(cached from run {first_uuid}\)\s+loss=0\.123457 accuracy=0\.93",
        _op_line(hit.stdout, "train"),
    ), hit.stdout
    assert re.fullmatch(r"  report\s+succeeded\s+rows=3", _op_line(hit.stdout, "report"))
    live_rows = [line for line in hit.stderr.splitlines() if line.startswith("train ")]
    assert any(
        re.match(rf"train\s+succeeded \(cached from run {first_uuid}\)", row) for row in live_rows
    ), hit.stderr
    assert (_starts(tmp_path, "train"), _starts(tmp_path, "report")) == (1, 2)

    fresh = _cli(["-f", str(path), "--no-cache"], prefect_server)
    assert fresh.returncode == 0, fresh.stderr
    assert re.fullmatch(
        r"  train\s+succeeded\s+loss=0\.123457 accuracy=0\.93", _op_line(fresh.stdout, "train")
    ), fresh.stdout
    assert _starts(tmp_path, "train") == 2  # nothing was served from the cache

    after = _cli(["-f", str(path), "--json"], prefect_server)
    payload = json.loads(after.stdout)
    train = payload["ops"]["train"]
    assert "cache hit" in train["message"]  # the --no-cache run's success was recorded...
    assert train["uuid"] != first_uuid  # ...and replaced the older one
    assert (_starts(tmp_path, "train"), _starts(tmp_path, "report")) == (2, 4)
    # the op's table (no key: its description names the op)
    tables = [
        a
        for a in api.artifacts(payload["flow_run_id"])
        if (a.description or "").startswith("params and outputs of `train`") and a.data
    ]
    assert tables and f"run {train['uuid']} (a cache hit" in str(tables[0].data)
    assert "cached from" in str(tables[0].data)


def test_the_api_keyword_cache_false_runs_again_and_records(tmp_path: Path):
    path = _dag(tmp_path, "cache-control-api")

    first = run(path)
    fresh = run(path, cache=False)
    hit = run(path)

    assert [r.status for r in (first, fresh, hit)] == ["succeeded"] * 3
    assert "cache hit" not in fresh.ops["train"]["message"]
    assert fresh.ops["train"]["uuid"] != first.ops["train"]["uuid"]
    assert "cache hit" in hit.ops["train"]["message"]
    assert hit.ops["train"]["uuid"] == fresh.ops["train"]["uuid"]
    assert (_starts(tmp_path, "train"), _starts(tmp_path, "report")) == (2, 3)


SWEEP_TRIAL = f"""\
version: 1.1
kind: component
name: summary-trial
inputs:
- {{name: x, type: int}}
outputs:
- {{name: loss, type: float}}
run:
  kind: job
  container:
    command: [{PY}, -c, "import sys; from polyaxon_prefect import tracking; \
tracking.log_outputs(loss=int(sys.argv[1]) / 3)", "{{{{ x }}}}"]
"""


def test_a_sweep_ends_with_a_line_per_trial_and_the_best(tmp_path: Path, prefect_server: str):
    (tmp_path / "trial.yaml").write_text(SWEEP_TRIAL, encoding="utf-8")
    path = tmp_path / "summary-sweep.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: summary-sweep\n"
        "matrix:\n  kind: hyperopt\n  algorithm: rand\n  numRuns: 3\n  seed: 1\n"
        "  metric: {name: loss, optimization: minimize}\n  params:\n"
        "    x: {kind: choice, value: [1, 2, 4]}\n"
        "pathRef: trial.yaml\n",
        encoding="utf-8",
    )

    done = _cli(["-f", str(path), "--storage", str(tmp_path / "study.journal")], prefect_server)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    trials = [
        re.fullmatch(r"  trial (\d+)\s+succeeded\s+value=(\S+)\s+x=(\d)", line) for line in lines
    ]
    found = [(int(m[1]), m[2], int(m[3])) for m in trials if m]
    assert sorted(index for index, _, _ in found) == [0, 1, 2], done.stdout
    for _, value, x in found:
        assert value == f"{x / 3:.6g}"  # 6 significant digits: 0.333333, 0.666667, 1.33333
    best_x = min(x for _, _, x in found)
    [best] = [line for line in lines if line.startswith("best: ")]
    assert re.fullmatch(
        rf"best: trial \d+  value={re.escape(f'{best_x / 3:.6g}')}  params x={best_x}", best
    )


def test_the_live_table_says_a_cache_hit_on_its_row_and_at_the_end():
    stream = io.StringIO()
    table = LiveTable(stream, color=False)

    table.start("pipeline", ["train", "report"])
    table.update("pipeline", "train", "succeeded", "0123abcd")
    table.update("pipeline", "report", "running")
    table.update("pipeline", "report", "succeeded")
    table.finish("pipeline", "succeeded")

    lines = stream.getvalue().splitlines()
    assert lines[1].startswith("train         succeeded (cached from run 0123abcd)")
    assert "cached" not in lines[3]
    assert lines[-2].startswith("  train         succeeded (cached from run 0123abcd)")
    assert lines[-1].rstrip() == "  report        succeeded"
