"""``server status``: where this home's background server runs (or ``stopped``) and whether its
warm runner listens, read from the Prefect home without Prefect: the one answer of both ways."""

from __future__ import annotations

from polyaxon_prefect.client.server._local_server import STOPPED_EXIT, running_server
from polyaxon_prefect.client.server._runner import runner_status

__all__ = ["server_status"]


def server_status() -> int:
    """``server status``: where the background server runs and its warm runner's state, or
    ``stopped`` (`STOPPED_EXIT`)."""
    current = running_server()
    if current is None:
        print("stopped")
        return STOPPED_EXIT
    print(f"running at {current.url} (pid {current.pid}; database: {current.database})")
    print(runner_status())
    return 0
