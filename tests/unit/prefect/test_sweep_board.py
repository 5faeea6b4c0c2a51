"""`SweepBoard.progress`: the sweep's loop never waits for the API (a busy server answered its
two calls in seconds, and no trial launched meanwhile); the latest progress is what is
published, and the final one is published last."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from polyaxon_prefect.prefect._artifacts import flush_artifacts
from polyaxon_prefect.prefect.sweep import _sweep_board
from polyaxon_prefect.search import SweepProgress


def test_progress_goes_in_the_background_latest_first_final_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    published: list[tuple[float, int]] = []
    release = threading.Event()

    def slow_artifact(value: float, **_: Any) -> str:  # a server that takes its time
        release.wait(5)
        return "artifact-id"

    def label(_run: Any, progress: dict[str, Any], _client: Any = None) -> None:
        published.append((time.monotonic(), progress["done"]))

    monkeypatch.setattr(_sweep_board, "progress_artifact", slow_artifact)
    monkeypatch.setattr(_sweep_board, "publish_label", label)
    monkeypatch.setattr(_sweep_board, "_PROGRESS_EVERY_SECONDS", 0.0)
    board = _sweep_board.SweepBoard("sweep", "uuid", flow_run_id="run-id")

    started = time.monotonic()
    for done in range(5):  # the loop's calls while the server does not answer
        board.progress(SweepProgress(done=done, total=10), final=False)
    assert time.monotonic() - started < 1.0, "the loop waited for the API"
    release.set()
    board.progress(SweepProgress(done=10, total=10), final=True)
    flush_artifacts()

    done_values = [done for _, done in published]
    assert done_values[-1] == 10  # the final one last
    assert done_values == sorted(done_values) and 4 in done_values  # the latest, not each one
    assert len(done_values) <= 3
    assert board.progress_id == "artifact-id"
