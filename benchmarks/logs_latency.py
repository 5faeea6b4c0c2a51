"""How soon ``polyaxon-prefect logs -f`` in another process shows a line a running job printed.

A job prints ``tick <i> <time.time()>`` every 0.5 s. ``polyaxon-prefect run`` runs it as a
fresh process against a ``prefect server start`` on loopback (its start is not timed; or the
server ``PREFECT_API_URL`` names); once the run exists, ``polyaxon-prefect logs RUN -f`` is
started as a third process. The job waits until ``logs -f`` shows its first line, so every
tick is printed while both are attached. For each tick, the delay is the time ``logs -f``
printed it less the time the job printed it; as a baseline, the same for the line appearing in
the run's own log file (``<run>/logs/job.log``, polled every 20 ms). Median and max of both
are printed against the target (``logs -f`` < 2 s).

The path a line takes: the job's pipe -> the run's process -> Prefect's API log handler
(batches sent every ``PREFECT_LOGGING_TO_API_BATCH_INTERVAL``: 0.5 s, polyaxon-prefect's
default) -> the server -> ``logs -f``'s poll (every 0.3 s).

Usage::

    python benchmarks/logs_latency.py [--lines 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from job_overhead import _prefect_server

TARGET_SECONDS = 2.0
JOB = """\
import os, sys, time
print("waiting", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
for i in range(int(sys.argv[2])):
    print(f"tick {i} {time.time():.6f}", flush=True)
    time.sleep(0.5)
"""


def _server(work: Path) -> contextlib.AbstractContextManager[str]:
    chosen = os.environ.get("PREFECT_API_URL")
    return contextlib.nullcontext(chosen) if chosen else _prefect_server(work)


def _flow_run_id(api: str, name: str, timeout: float = 120) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    deadline = time.monotonic() + timeout
    wanted = FlowRunFilter(name=FlowRunFilterName(any_=[name]))
    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        while time.monotonic() < deadline:
            found = c.read_flow_runs(flow_run_filter=wanted)
            if found:
                return str(found[0].id)
            time.sleep(0.1)
    raise SystemExit(f"no flow run named {name} after {timeout:.0f} s")


def _ticks(lines: Iterator[tuple[float, str]]) -> dict[int, float]:
    """Tick index -> delay (seen - printed), from ``(seen at, line)`` pairs."""
    delays: dict[int, float] = {}
    for seen, line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "tick":
            delays.setdefault(int(parts[1]), seen - float(parts[2]))
    return delays


def _follow(process: subprocess.Popen[str], got: list[tuple[float, str]]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        got.append((time.time(), line.rstrip("\n")))


def _tail(root: Path, stop: threading.Event, got: list[tuple[float, str]]) -> None:
    """The run's ``job.log`` polled every 20 ms: each new line with when it was seen."""
    done = ""
    while not stop.is_set():
        files = list(root.glob("*/*/logs/job.log"))
        if files:
            text = files[0].read_text(encoding="utf-8", errors="replace")
            if len(text) > len(done):
                now = time.time()
                complete = text[: text.rfind("\n") + 1]
                got += [(now, line) for line in complete[len(done) :].splitlines()]
                done = complete
        time.sleep(0.02)


def _row(name: str, delays: list[float]) -> str:
    return (
        f"{name:<28} median {statistics.median(delays):6.3f} s   max {max(delays):6.3f} s   "
        f"({len(delays)} lines)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20, help="ticks the job prints (0.5 s apart)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="logs-latency-") as tmp, _server(Path(tmp)) as api:
        work = Path(tmp)
        name = f"latency-{uuid.uuid4().hex[:8]}"
        go = work / "go"
        (work / "job.py").write_text(JOB, encoding="utf-8")
        command = [sys.executable, str(work / "job.py"), str(go), str(args.lines)]
        (work / "job.yaml").write_text(
            f"version: 1.1\nkind: component\nname: {name}\n"
            f"run: {{kind: job, container: {{command: {command}}}}}\n",
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "PREFECT_API_URL": api,
            "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(work / "artifacts"),
        }
        cli = [sys.executable, "-m", "polyaxon_prefect.cli"]
        out = subprocess.DEVNULL
        job = subprocess.Popen(
            [*cli, "run", "-f", str(work / "job.yaml")], env=env, stdout=out, stderr=out
        )
        follow: subprocess.Popen[str] | None = None
        stop = threading.Event()
        try:
            run_id = _flow_run_id(api, name)
            follow = subprocess.Popen(
                [*cli, "logs", run_id, "-f"], env=env, stdout=subprocess.PIPE, text=True
            )
            shown: list[tuple[float, str]] = []
            in_file: list[tuple[float, str]] = []
            threading.Thread(target=_follow, args=(follow, shown), daemon=True).start()
            tail = threading.Thread(target=_tail, args=(work / "artifacts", stop, in_file))
            tail.start()
            deadline = time.monotonic() + 120
            while not any(line == "waiting" for _, line in shown):
                if time.monotonic() > deadline or follow.poll() is not None:
                    raise SystemExit("`logs -f` did not show the job's first line")
                time.sleep(0.02)
            go.touch()
            job_exit = job.wait(timeout=args.lines + 120)
            follow_exit = follow.wait(timeout=60)
            stop.set()
            tail.join()
        finally:
            go.touch()
            stop.set()
            for process in (job, follow):
                if process is not None and process.poll() is None:
                    process.kill()
    via_logs = _ticks(iter(shown))
    via_file = _ticks(iter(in_file))
    if len(via_logs) != args.lines or len(via_file) != args.lines:
        raise SystemExit(f"lines lost: logs -f {len(via_logs)}, file {len(via_file)}")
    print(f"job exit {job_exit}, logs -f exit {follow_exit} (the run's status: 0 = succeeded)")
    print(_row("logs -f (another process)", list(via_logs.values())))
    print(_row("job.log (baseline)", list(via_file.values())))
    worst = max(via_logs.values())
    verdict = "met" if worst < TARGET_SECONDS else "MISSED"
    print(f"target: every line < {TARGET_SECONDS:.0f} s after the job printed it: {verdict}")
    return 0 if worst < TARGET_SECONDS and job_exit == follow_exit == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
