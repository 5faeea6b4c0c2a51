"""Secrets and templates across a DAG, under the harness: what people see is masked, what ops
pass each other is the real value, and an upstream output is data, never a template."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.prefect import run
from polyaxon_prefect.runtime.render._connections import Connection

PY = sys.executable
SECRET = "s3cr3t-DAG-VALUE-9090"

# The commands are templates themselves (rendered, as written in the file): build the braces
# at run time, so that only the *output* holds `{{ ... }}`.
TEXT = "{{ 7*7 }} and {{ globals }}"
TEXT_EXPR = "chr(123)*2 + ' 7*7 ' + chr(125)*2 + ' and ' + chr(123)*2 + ' globals ' + chr(125)*2"
PRODUCE = (
    "import os; from polyaxon_prefect import tracking; "
    f"tracking.log_outputs(token=os.environ['API_TOKEN'], text={TEXT_EXPR}); "
    "tracking.log_metrics(step=1, **{os.environ['API_TOKEN']: 1.0})"
)
CONSUME = (
    "import json, os, sys; p = json.loads(os.environ['POLYAXON_PREFECT_PARAMS']); "
    f"ok = p['token'] == os.environ['API_TOKEN'] and p['text'] == {TEXT_EXPR}; "
    "print('consumer got the real values' if ok else 'consumer got ' + json.dumps(p)); "
    "sys.exit(0 if ok else 3)"
)


def dag(tmp_path: Path) -> Path:
    produce = {
        "name": "produce",
        "outputs": [{"name": "token", "type": "str"}, {"name": "text", "type": "str"}],
        "run": {
            "kind": "job",
            "connections": ["api"],
            "container": {"command": [PY, "-c", PRODUCE]},
        },
    }
    consume = {
        "name": "consume",
        "inputs": [{"name": "token", "type": "str"}, {"name": "text", "type": "str"}],
        "run": {
            "kind": "job",
            "connections": ["api"],
            "container": {"command": [PY, "-c", CONSUME]},
        },
    }
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": "secret-dag",
        "run": {
            "kind": "dag",
            "operations": [
                {"name": "a", "dagRef": "produce"},
                {
                    "name": "b",
                    "dagRef": "consume",
                    "params": {
                        "token": {"ref": "ops.a", "value": "outputs.token"},
                        "text": {"ref": "ops.a", "value": "outputs.text"},
                    },
                },
            ],
            "components": [produce, consume],
        },
    }
    path = tmp_path / "dag.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_ops_pass_real_values_and_people_see_them_masked(
    tmp_path: Path, api: Any, monkeypatch: pytest.MonkeyPatch
):
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "creds.env").write_text(f"API_TOKEN={SECRET}\n", encoding="utf-8")
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(secrets_dir))
    connection = Connection.model_validate(
        {"name": "api", "kind": "http", "schema": {"url": "https://x"}, "secret": {"name": "creds"}}
    )

    result = run(dag(tmp_path), connections={"api": connection})

    assert result.status == "succeeded", result.ops
    assert result.ops["b"]["status"] == "succeeded"  # it received the real token and text
    shown = json.dumps(result.to_dict())
    assert SECRET not in shown and "***" in shown
    assert TEXT in shown
    assert not [line for line in api.logs(result.flow_run_id) if SECRET in line]
    for artifact in api.artifacts(result.flow_run_id):
        assert SECRET not in json.dumps(artifact.data, default=str)


def test_a_sweep_suggestion_is_data_never_a_template(tmp_path: Path):
    """A suggestion reaches the trial as written: `{{ 7*7 }}` is not rendered to 49."""
    code = (
        "import json, os, sys; p = json.loads(os.environ['POLYAXON_PREFECT_PARAMS']); "
        "from polyaxon_prefect import tracking; tracking.log_outputs(got=p['msg'])"
    )
    (tmp_path / "echo.yaml").write_text(
        yaml.safe_dump(
            {
                "version": 1.1,
                "kind": "component",
                "name": "echo",
                "inputs": [{"name": "msg", "type": "str"}],
                "outputs": [{"name": "got", "type": "str"}],
                "run": {"kind": "job", "container": {"command": [PY, "-c", code]}},
            }
        ),
        encoding="utf-8",
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "version: 1.1\nkind: operation\nname: data-sweep\n"
        "matrix:\n  kind: mapping\n  values:\n  - {msg: '{{ 7*7 }}'}\n  - {msg: '{{ globals }}'}\n"
        "pathRef: echo.yaml\n",
        encoding="utf-8",
    )

    result = run(sweep, storage=str(tmp_path / "study.journal"))

    assert result.status == "succeeded"
    assert sorted(t["outputs"]["got"] for t in result.trials) == ["{{ 7*7 }}", "{{ globals }}"]
