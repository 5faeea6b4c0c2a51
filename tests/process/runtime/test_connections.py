"""Connections file loading and what a connection gives a local process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from polyaxon_prefect.runtime import (
    connections_env,
    load_connections,
    run_process,
)
from tests.unit.runtime.test_connections import _write

pytestmark = pytest.mark.process


def test_connection_secrets_are_masked_in_a_real_process(tmp_path: Path) -> None:
    (tmp_path / "s.env").write_text("API_TOKEN=tok-very-secret\n")
    text = "- {name: a, kind: http, schema: {url: 'http://x'}, secret: {name: s}}\n"
    conns = load_connections(_write(tmp_path, text))
    env, secrets = connections_env(conns.values(), secrets_dir=tmp_path, environ={})
    result = run_process(
        [sys.executable, "-c", "import os; print('token is', os.environ['API_TOKEN'])"],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=tmp_path,
        timeout=30,
        secrets=secrets,
    )
    assert result.stdout_tail == ["token is ***"]
