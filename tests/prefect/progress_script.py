"""A trial or job for the progress tests: logs ``loss`` over 3 steps (its best at step 1,
below its last), says how far it is with ``log_progress``, and holds before its last step
until the test creates the file ``release`` names (when ``hold`` is true)."""

from __future__ import annotations

import time
from pathlib import Path

from polyaxon_prefect import tracking


def main() -> None:
    params = tracking.get_params()
    x = float(params.get("x") or 0.0)
    hold = bool(params.get("hold")) and x >= float(params.get("hold_from") or 0.0)
    base = (x - 0.3) ** 2
    for step, loss in enumerate([base + 0.2, base - 0.1]):
        tracking.log_metrics(step=step, loss=loss)
        tracking.log_progress((step + 1) / 4)
        time.sleep(0.5)
    release = Path(str(params.get("release") or "release"))
    while hold and not release.exists():
        time.sleep(0.1)
    tracking.log_metrics(step=2, loss=base)
    tracking.log_progress(1.0)
    tracking.log_outputs(loss=base)


if __name__ == "__main__":
    main()
