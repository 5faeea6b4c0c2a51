"""The README and the docs pages read top to bottom: every journey block in reading order
(`tests/doc_pages.py`) on one fresh Prefect home, each journey's checks asserted as it goes.

A file of its own (the journeys whose checks need a home of their own run alone in
`test_readme.py`), so the parallel suite runs the two on different workers.
"""

from __future__ import annotations

import pytest

from tests.integration.conftest import stop
from tests.integration.test_readme import (
    ALONE,
    CHECKS,
    Journey,
    doc_blocks,
    journey,
    journeys,
)

__all__ = ["journey"]  # the fixture, shared with test_readme.py

WORKER_GRACE = 3.0
"""Seconds a stopped background line (the worker) is given after its Ctrl-C."""


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.server
@pytest.mark.timeout(1800)  # every journey in a row: about 5 min on a quiet machine
def test_readme_walked_top_to_bottom_on_one_home(journey: Journey) -> None:
    """Every journey block in reading order (the README, then the docs pages in the nav's
    order) on ONE fresh Prefect home, as a user reading them top to bottom: what earlier
    blocks left (runs of the same name, a work pool, a profile pointing at the server, a
    stopped server) must not break a later block, and each journey's checks hold after it
    (but those of `ALONE`, checked alone). A line that runs until stopped (the
    worker) is stopped when its block is done, as its user would."""
    walked = []
    for block in doc_blocks():
        if block.marker in (None, "reference"):
            continue
        checked = block.marker not in ALONE
        journey.walk_block(block, checked=checked)
        if checked:
            CHECKS[block.marker](journey)  # the worker still runs, as the check expects
        for process in journey.background.values():
            # Ctrl-C, then SIGKILL if it lingers: Prefect's worker often took the whole 10 s
            # default grace to end after its SIGINT, with nothing left for it to do
            stop(process, grace=WORKER_GRACE)
        journey.background.clear()
        walked.append(block.marker)
    assert walked == list(journeys())
