"""A training job of the MLflow mirror tests (``python metrics_script.py LR [GO_FILE]``).

Logs ``loss`` and ``acc`` at steps 0, 1 and 2 (with ``GO_FILE``: waits for that file to exist
after step 1, so a test can look at a run while it goes), writes ``model.txt`` and a link to a
file outside its folder in its artifacts, then its outputs ``loss`` and ``note``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from polyaxon_prefect import tracking


def main(lr: float, go: str | None) -> None:
    for step in range(3):
        if step == 2 and go is not None:
            deadline = time.monotonic() + 120
            while not Path(go).exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        tracking.log_metrics(step=step, loss=round(lr * (3 - step), 6), acc=0.5 + step / 10)
    artifacts = Path(tracking.get_artifacts_path())
    (artifacts / "model.txt").write_text(f"weights lr={lr}\n", encoding="utf-8")
    outside = artifacts.parent / f"{artifacts.name}-private.txt"
    outside.write_text("not the run's\n", encoding="utf-8")
    with contextlib.suppress(FileExistsError):  # the replicas of a distributed run share it
        os.symlink(outside, artifacts / "leak.txt")
    tracking.log_outputs(loss=round(lr * 0.5, 6), note="ok")


if __name__ == "__main__":
    main(float(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
