"""The Prefect internals `polyaxon_prefect.prefect._client` relies on are still there.

Each check names what moved, so a Prefect upgrade that changes one fails here, loudly, rather
than as slow sweeps (a lost fast path) or runs the reaper cannot mark crashed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.states import Completed

from polyaxon_prefect.prefect._client import api_request, ephemeral_api_url, result_value
from tests.prefect.conftest import free_port


def test_the_sync_client_exposes_its_httpx_client_and_csrf_hook():
    with get_client(sync_client=True) as client:
        http = client._client  # what `api_request` sends on
        assert hasattr(http, "build_request") and hasattr(http, "send")
        if getattr(http, "enable_csrf_support", False):
            assert callable(http._add_csrf_headers)
        response = api_request(client, "POST", "/flows/filter", {"limit": 1})
        assert response.status_code == 200 and isinstance(response.json(), list)


def test_the_ephemeral_server_is_found_on_its_class(
    tmp_path: Path, prefect_database_template: Path
) -> None:
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL, temporary_settings

    assert isinstance(SubprocessASGIServer._instances, dict)
    # one of Prefect's subprocess servers, started as Prefect starts one for a process (on a
    # copy of the migrated database: nothing to migrate): it must be found
    database = shutil.copyfile(prefect_database_template, tmp_path / "prefect.db")
    url = f"sqlite+aiosqlite:///{database}"
    with temporary_settings(updates={PREFECT_SERVER_DATABASE_CONNECTION_URL: url}):
        server = SubprocessASGIServer(port=free_port())
        server.start(timeout=300)
    try:
        assert ephemeral_api_url() == server.api_url
    finally:
        server.stop()
        SubprocessASGIServer._instances.pop(server.port, None)


def test_an_in_memory_result_is_read_from_its_record():
    from prefect.results import ResultRecord

    assert "result" in ResultRecord.model_fields
    assert result_value(Completed(data={"a": 1})) == {"a": 1}
