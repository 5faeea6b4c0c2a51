"""Views sent in the background (a DAG op's table, a label): bounded while the API is slow,
none lost, all done when `flush_artifacts` returns."""

from __future__ import annotations

import threading
import time

from polyaxon_prefect.prefect import _artifacts
from polyaxon_prefect.prefect._artifacts import flush_artifacts, in_background


def test_a_slow_api_holds_the_callers_at_the_bound_and_loses_no_view() -> None:
    lock = threading.Lock()
    pending = peak = 0
    done: list[int] = []

    calls = 4 * _artifacts._MAX_PENDING  # ends faster than the API takes their views

    def slow_view(index: int) -> None:  # an API that takes a second per view
        nonlocal pending, peak
        with lock:
            pending += 1
            peak = max(peak, pending)
        time.sleep(1.0)
        with lock:
            pending -= 1
            done.append(index)

    callers = [threading.Thread(target=in_background, args=(slow_view, i)) for i in range(calls)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    # the last callers waited for a place, longer than `_SLOT_WAIT_SECONDS` while views kept
    # ending: what is left is at most the bound, not a backlog
    with lock:
        left = calls - len(done)
    assert left <= _artifacts._MAX_PENDING
    flush_artifacts()
    assert sorted(done) == list(range(calls))
    assert peak <= 4  # the pool's workers
