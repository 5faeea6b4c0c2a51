"""The replicas executor without Prefect: what is refused before anything starts, and stops."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from polyaxon_prefect.runtime import executor_for
from tests.unit.runtime.test_replicas import _prepare

pytestmark = pytest.mark.process


def test_cancelling_stops_every_replica(tmp_path: Path):
    sleep = f"[{sys.executable}, -c, 'import time; print(1, flush=True); time.sleep(60)']"
    prepared = _prepare(
        tmp_path,
        f"""\
        kind: pytorchjob
        master: {{container: {{command: {sleep}}}}}
        worker: {{replicas: 2, container: {{command: {sleep}}}}}
        """,
    )
    cancel = threading.Event()
    lines: list[str] = []

    def on_line(_stream: str, line: str) -> None:
        lines.append(line)
        if len(lines) == 3:
            cancel.set()

    started = time.monotonic()
    result = executor_for("pytorchjob").execute(prepared, on_line=on_line, cancel_event=cancel)
    assert result.status == "stopped"
    assert time.monotonic() - started < 10
    assert sorted(lines) == ["[master-0] 1", "[worker-0] 1", "[worker-1] 1"]
