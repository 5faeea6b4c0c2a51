"""A DAG op's params and outputs table is written off the op's path, and never lost: the
DAG's next op does not wait for the API, and the run ends only once every table is there. An
op with no param, output or metric has none (its status and uuid are shown elsewhere)."""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.prefect import _job_flow, run

SLOW_SECONDS = 3.0
"""How long the API takes to store each op's table here (a busy server)."""


def test_a_slow_server_holds_no_op_and_loses_no_table(
    tmp_path: Path, api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    lock = threading.Lock()
    real_table = _job_flow.table_artifact

    def slow_table(rows: list[dict[str, Any]], *, key: str | None, description: str) -> None:
        time.sleep(SLOW_SECONDS)  # the server answers late, then stores it
        real_table(rows, key=key, description=description)
        with lock:
            written.append(_op_of(description))

    monkeypatch.setattr(_job_flow, "table_artifact", slow_table)
    code = "from polyaxon_prefect import tracking; tracking.log_outputs(loss=0.5)"
    job = {
        "name": "emit",
        "outputs": [{"name": "loss", "type": "float"}],
        "run": {"kind": "job", "container": {"command": [sys.executable, "-c", code]}},
    }
    names = ["a", "b", "c"]
    operations = [
        {"name": n, "component": job, **({"dependencies": [names[i - 1]]} if i else {})}
        for i, n in enumerate(names)
    ]
    # no param, output or metric: its table would only repeat its status and uuid
    quiet = {"name": "quiet", "run": {"kind": "job", "container": {"command": ["true"]}}}
    operations.append({"name": "quiet", "component": quiet, "dependencies": ["c"]})
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": "slow-reports",
        "cache": {"disable": True},
        "run": {"kind": "dag", "operations": operations},
    }
    path = tmp_path / "dag.yaml"
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")

    result = run(path)

    assert result.status == "succeeded", result.message
    # every table reached the server before the run ended: none waits, none is lost
    assert sorted(written) == ["a", "b", "c"]
    tables = {_op_of(a.description): a for a in api.artifacts(result.flow_run_id) if _table(a)}
    assert set(tables) == {"a", "b", "c"}
    assert result.ops is not None
    for name in names:
        table = tables[name]
        assert table.type == "table" and table.task_run_id is not None  # on the op's task run
        assert table.key is None  # named by its description: no collection for the server
        assert result.ops[name]["uuid"] in (table.description or "")
        rows = json.loads(table.data) if isinstance(table.data, str) else table.data
        assert {"kind": "output", "name": "loss", "value": 0.5} in rows
    # the op that says nothing more has no table: its status is its task run's state, its
    # uuid is in the DAG's report
    assert result.ops["quiet"]["status"] == "succeeded" and result.ops["quiet"]["uuid"]
    assert not [a for a in api.artifacts(result.flow_run_id) if "`quiet`" in (a.description or "")]
    # the chain did not wait for its tables: each op started before its upstream's table
    # could have been stored
    assert result.artifacts_path is not None
    ops = json.loads((Path(result.artifacts_path) / "ops.json").read_text())
    for upstream, op in itertools.pairwise(names):
        gap = ops[op]["started_at"] - ops[upstream]["finished_at"]
        assert gap < SLOW_SECONDS, f"`{op}` waited {gap:.1f} s for `{upstream}`'s table"


def _table(artifact: Any) -> bool:
    """A DAG op's params and outputs table (no key: its description names the op)."""
    return (artifact.description or "").startswith("params and outputs of `")


def _op_of(description: str) -> str:
    """The op a table's description names: ``params and outputs of `a` (run ...)``."""
    return description.split("`")[1]
