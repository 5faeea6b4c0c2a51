"""The Prefect internals `polyaxon_prefect.prefect._client` relies on are still there.

Each check names what moved, so a Prefect upgrade that changes one fails here, loudly, rather
than as slow sweeps (a lost fast path) or runs the reaper cannot mark crashed.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.states import Completed

from polyaxon_prefect.prefect._client import api_request, ephemeral_api_url, result_value


def test_the_sync_client_exposes_its_httpx_client_and_csrf_hook():
    with get_client(sync_client=True) as client:
        http = client._client  # what `api_request` sends on
        assert hasattr(http, "build_request") and hasattr(http, "send")
        if getattr(http, "enable_csrf_support", False):
            assert callable(http._add_csrf_headers)
        response = api_request(client, "POST", "/flows/filter", {"limit": 1})
        assert response.status_code == 200 and isinstance(response.json(), list)


def test_the_ephemeral_server_is_found_on_its_class(prefect_server: str):
    from prefect.server.api.server import SubprocessASGIServer

    assert isinstance(SubprocessASGIServer._instances, dict)
    # the harness's server is one of Prefect's subprocess servers: it must be found
    assert ephemeral_api_url() == prefect_server


def test_an_in_memory_result_is_read_from_its_record():
    from prefect.results import ResultRecord

    assert "result" in ResultRecord.model_fields
    assert result_value(Completed(data={"a": 1})) == {"a": 1}
