"""`run_secrets`: every secret of every op of a run, at any depth, found before any op runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.runtime import Connection, run_secrets
from polyaxon_prefect.runtime.logs._masking import mask_text

DAG = """\
version: 1.1
kind: operation
name: outer
component:
  name: outer
  run:
    kind: dag
    operations:
      - name: nested
        component:
          run:
            kind: dag
            operations:
              - name: deep
                component:
                  run: {kind: job, connections: [deep], container: {command: [echo]}}
      - name: templated
        component:
          inputs: [{name: conn, type: str, value: other}]
          run: {kind: job, connections: ["{{ conn }}"], container: {command: [echo]}}
      - name: cloner
        component:
          run:
            kind: job
            init: [{git: {url: "https://user:gitT0ken@example.com/r.git"}}]
            container: {command: [echo]}
"""


def _connection(name: str, secret: str) -> Connection:
    return Connection.model_validate(
        {"name": name, "kind": "http", "schema": {"url": "https://x"}, "secret": {"name": secret}}
    )


def test_a_nested_ops_connection_and_a_url_credential_are_found_a_templated_name_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deep.env").write_text("TOKEN=d33pS3cret\n")
    (tmp_path / "other.env").write_text("TOKEN=0therS3cret\n")
    path = tmp_path / "dag.yaml"
    path.write_text(DAG)
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(tmp_path))
    secrets = run_secrets(
        load_polyaxonfile(path).operation,
        {"deep": _connection("deep", "deep"), "other": _connection("other", "other")},
    )
    assert "d33pS3cret" in secrets
    assert "gitT0ken" in secrets
    assert "0therS3cret" not in secrets  # known only once its op renders the name
    assert mask_text("got d33pS3cret") == "got ***"  # remembered by this process
