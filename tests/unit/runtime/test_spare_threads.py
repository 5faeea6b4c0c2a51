"""A job's pipes and metric mirror run on kept threads: the next job's reuse them (no thread
starts per op), and one whose work raised is still kept."""

from __future__ import annotations

import threading
import time

import pytest

from polyaxon_prefect.runtime.session import _spare_threads
from polyaxon_prefect.runtime.session._spare_threads import run_in_thread


def _until_idle() -> None:
    """The thread that ran the last work waits for the next (it is kept)."""
    deadline = time.monotonic() + 10
    while _spare_threads._IDLE == 0:
        assert time.monotonic() < deadline, "no thread was kept"
        time.sleep(0.01)


def _ran_on() -> int:
    done = threading.Event()
    seen: list[int] = []

    def work() -> None:
        seen.append(threading.get_ident())
        done.set()

    run_in_thread(work)
    assert done.wait(10)
    _until_idle()
    return seen[0]


def test_the_next_work_runs_on_a_kept_thread_even_after_one_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = {_ran_on()} | {thread.ident for thread in threading.enumerate()}
    threads = threading.active_count()
    told: list[BaseException | None] = []
    # said as an ended thread's exception would be
    monkeypatch.setattr(threading, "excepthook", lambda args: told.append(args.exc_value))

    def fails() -> None:
        raise ValueError("a pump's bug")

    run_in_thread(fails)
    _until_idle()
    assert {_ran_on() for _ in range(3)} <= kept
    assert [type(error) for error in told] == [ValueError]
    assert threading.active_count() == threads, "no thread started for the later work"
