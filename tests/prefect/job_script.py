"""The process the tests run (``python job_script.py MODE ...``), one behaviour per mode."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from polyaxon_prefect import tracking


def main(mode: str, *args: str) -> int:
    if mode == "ok":
        lr = float(args[0])
        print(f"training with lr {lr}")
        print("a warning on stderr", file=sys.stderr)
        tracking.log_metrics(step=1, loss=lr * 4)
        tracking.log_outputs(loss=lr * 2)
        return 0
    if mode == "fail":
        print("starting")
        print("boom: the data folder is empty", file=sys.stderr)
        return 3
    if mode == "sleep":
        time.sleep(30)
        return 0
    if mode == "flaky":  # fails on the first attempt, succeeds once the marker exists
        marker = Path(args[0])
        if not marker.exists():
            marker.write_text("attempt 1\n")
            print("first attempt fails", file=sys.stderr)
            return 1
        tracking.log_outputs(loss=1.0)
        return 0
    if mode == "count":  # one line in the marker per process started
        with open(args[0], "a") as marker:
            marker.write(f"run lr={args[1]}\n")
        tracking.log_outputs(loss=float(args[1]) * 10)
        return 0
    if mode == "undeclared":
        tracking.log_outputs(loss=1.0, surprise=2)
        return 0
    if mode == "argv":
        tracking.log_outputs(arg=args[0])
        return 0
    if mode == "secret":
        token = os.environ["API_TOKEN"]
        print(f"token {token}")
        print(f"failing with {token}", file=sys.stderr)
        return 1
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
