"""A background server started on a home whose database it (or the template) already prepared
skips Prefect's migration check and block registration, and still serves every block type."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect.prefect.server._prepared_database import RECORD_FILE
from tests.integration.conftest import free_port, new_home_env

pytestmark = [pytest.mark.server, pytest.mark.process]


@pytest.fixture
def served(
    tmp_path: Path, migrated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, str]]:
    from polyaxon_prefect.prefect.server._background_server import start_server, stop_server

    for name, value in new_home_env(migrated_home, tmp_path / "artifacts", "0").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("POLYAXON_PREFECT_RUNNER", "0")  # the server's start is the point
    server, started = start_server(port=free_port(), timeout=300)
    assert started
    try:
        yield migrated_home, server.api_url
    finally:
        stop_server()


def test_a_seeded_homes_server_skips_block_registration_yet_has_the_blocks(
    served: tuple[Path, str],
) -> None:
    home, api_url = served
    record_before = (home / RECORD_FILE).read_text()
    request = urllib.request.Request(
        f"{api_url}/block_types/filter",
        data=json.dumps({"limit": 200}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        slugs = {block_type["slug"] for block_type in json.loads(response.read())}
    # Prefect's own block types and those of the installed collection (prefect-kubernetes)
    assert {"secret", "kubernetes-cluster-config", "kubernetes-credentials"} <= slugs
    # Prefect's memoized registration did not run: it writes its memo whenever it does
    assert not (home / "memo_store.toml").exists()
    assert (home / RECORD_FILE).read_text() == record_before
