"""Before a benchmark stops its test server: wait until the server has recorded every run.

Task runs reach the server as events that its recorder writes in batches, seconds behind on a
busy machine; a server stopped meanwhile cancels the batch in flight and prints its traceback
(``CancelledError`` in ``task_run_recorder``). Waiting until the counts settle ends the
benchmark cleanly, and says the timed runs' records are all there.
"""

from __future__ import annotations

import time

__all__ = ["drain"]

_OPEN = ["SCHEDULED", "PENDING", "RUNNING", "CANCELLING"]


def _counts(client: object) -> tuple[int, int]:
    request = client.request  # type: ignore[attr-defined]
    total = request("POST", "/task_runs/count", json={}).json()
    body = {"task_runs": {"state": {"type": {"any_": _OPEN}}}}
    still_open = request("POST", "/task_runs/count", json=body).json()
    return int(total), int(still_open)


def drain(timeout: float = 120.0, every: float = 1.0) -> bool:
    """Wait (at most ``timeout`` s) until no task run is open and the count is the same twice
    ``every`` s apart; True when it settled."""
    from prefect.client.orchestration import get_client
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    # this process's events and log lines still queued go first: the counts wait on them
    EventsWorker.drain_all(timeout=timeout)
    APILogWorker.drain_all(timeout=timeout)
    deadline = time.monotonic() + timeout
    last: tuple[int, int] | None = None
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            try:
                counts = _counts(client)
            except Exception:  # a busy server: ask again
                counts = None
            if counts is not None and counts == last and counts[1] == 0:
                return True
            last = counts
            time.sleep(every)
    return False
