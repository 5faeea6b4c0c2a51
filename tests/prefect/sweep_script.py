"""A tiny trial for the sweep tests: params come from the tracking env, marks go to files.

Writes ``<marks>/<run uuid>.json`` with its params, start and end times (the tests count
process starts and measure overlap from them), logs ``loss`` per step and outputs ``loss``:
``(x - 0.3) ** 2`` plus ``penalty``; ``fail_over``: exit 2 when ``x`` exceeds it; ``hold_over``:
when ``x`` exceeds it, wait before ending while ``<marks>/hold`` exists.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from polyaxon_prefect import tracking


def _write(mark: Path, record: dict[str, object]) -> None:
    # whole or not at all: the tests read marks while trials still write them
    partial = mark.with_suffix(".part")
    partial.write_text(json.dumps(record), encoding="utf-8")
    partial.replace(mark)


def main() -> None:
    params = tracking.get_params()
    started = time.time()
    marks = Path(params["marks"])
    marks.mkdir(parents=True, exist_ok=True)
    mark = marks / f"{os.environ[tracking.ENV_RUN_UUID]}.json"
    record = {"params": params, "start": started, "pid": os.getpid()}
    _write(mark, record)
    x = float(params.get("x") or 0.0)
    loss = (x - 0.3) ** 2 + float(params.get("penalty") or 0.0)
    steps = int(params.get("steps") or 1)
    for step in range(steps):
        tracking.log_metrics(step=step, loss=loss + 0.01 * (steps - step))
        time.sleep(float(params.get("sleep") or 0.0))
    hold_over = params.get("hold_over")
    # a test that kills the sweep holds these trials running until it has (however slow
    # its own polling on a loaded machine)
    while hold_over is not None and x > float(hold_over) and (marks / "hold").exists():
        time.sleep(0.05)
    fail_over = params.get("fail_over")
    if fail_over is not None and x > float(fail_over):
        print(f"x={x} is over {fail_over}", file=sys.stderr)
        sys.exit(2)
    resource = params.get("epochs")
    tracking.log_outputs(loss=loss, resource_type=type(resource).__name__)
    record["end"] = time.time()
    _write(mark, record)


if __name__ == "__main__":
    main()
