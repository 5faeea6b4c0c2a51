"""What a sweep costs per trial: `polyaxon-prefect` sweeps against raw processes and Prefect.

100 trials of a no-op job (``python -c pass``) at concurrency 4, four ways:

- ``raw``: the same 100 processes in a thread pool of 4 (no Prefect, no study);
- ``mapped``: a hand-written Prefect flow mapping a task that runs the process over the 100
  configs (``ThreadPoolTaskRunner(max_workers=4)``);
- ``subflows``: a hand-written Prefect flow mapping a subflow wrapped in a task
  (``task(flow).map``), a child flow run per config, as the sweep has;
- ``sweep``: ``polyaxon_prefect.run`` on a ``mapping`` matrix of the 100 configs: an Optuna
  study in a local journal file, a child flow run per trial, progress/leaderboard artifacts.

Prints the wall times, the sweep's overhead per trial over ``raw``, the CPU it costs per
trial over ``raw`` in this process (the client: the sweep's loop, its trial threads, its
requests) and in the server's process (its test server's, or ``--server-pid``'s when
``PREFECT_API_URL`` is set; Linux only: read from ``/proc``), and its ratio to
``subflows``, each with its target line (``met`` or ``MISSED``): at most 15 ms per trial (on a
quiet machine; the load average before each round is printed), at
most 1x the hand-written flow that records what the sweep records (a child flow run per
trial: the product's rule, so that each trial is a run of its own in the UI, with its
parameters, logs and state, as a Polyaxon user expects). For scale it prints the ratio to
``mapped`` too: task runs reach the server as batched events, where each child flow run is one
write (a few tens of ms of SQLite on 2 cores), so no sweep that keeps a flow run per trial can
reach the task-mapped flow's time on SQLite. Runs
against a fresh test server (``prefect_test_harness``) unless ``PREFECT_API_URL`` is set; each
case runs ``--repeat`` times, interleaved; the overhead and the ratios are paired (each
round's sweep against the same round's baselines) and reported as median [min, max]. Each timed
run starts after ``--settle`` seconds of pause: right after a run of 100 trials the server is
still writing, SQLite answers the next run's first request ``503``, and Prefect's client backs
off 2 s (then 4 s) whichever case comes next.

Usage::

    python benchmarks/sweep_overhead.py [--trials 100] [--concurrency 4] [--repeat 3]
        [--settle 3] [--server-pid PID] [--json]

On 2 cores every CPU millisecond the sweep adds per trial costs about half a millisecond of
wall per trial once the trials' own processes keep both cores busy: the CPU lines say which
side (client or server) a change moved, where the wall time on a shared machine cannot.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _drain import drain

ROOT = Path(tempfile.mkdtemp(prefix="sweep-overhead-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(ROOT / "artifacts")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

NOOP = [sys.executable, "-c", "pass"]
TARGET_MS_PER_TRIAL = 15.0
TARGET_RATIO = 1.0


def sweep_file(trials: int, concurrency: int) -> Path:
    values = ", ".join(f"{{i: {i}}}" for i in range(trials))
    text = f"""\
version: 1.1
kind: operation
name: overhead
matrix:
  kind: mapping
  concurrency: {concurrency}
  values: [{values}]
component:
  name: noop
  inputs: [{{name: i, type: int}}]
  run:
    kind: job
    container:
      command: [{sys.executable}, -c, pass]
"""
    path = ROOT / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def raw(trials: int, concurrency: int) -> None:
    def one(_: int) -> None:
        subprocess.run(NOOP, check=True)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(trials)))


def mapped(trials: int, concurrency: int) -> None:
    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    @task
    def one(i: int) -> int:
        subprocess.run(NOOP, check=True)
        return i

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=concurrency))
    def hand_written() -> None:
        one.map(range(trials)).result()

    from polyaxon_prefect.prefect._settings import local_run_settings

    with local_run_settings():
        hand_written()


def mapped_subflows(trials: int, concurrency: int) -> None:
    """The same as a hand-written Prefect user would write a sweep of child flow runs: a
    subflow wrapped in a task (`task(flow)`, Prefect's way to map flows), mapped."""
    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    @flow
    def trial(i: int) -> int:
        subprocess.run(NOOP, check=True)
        return i

    trial_task = task(trial)

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=concurrency))
    def hand_written_subflows() -> None:
        trial_task.map(range(trials)).result()

    from polyaxon_prefect.prefect._settings import local_run_settings

    with local_run_settings():
        hand_written_subflows()


def sweep(path: Path) -> None:
    from polyaxon_prefect.prefect import run

    result = run(path)
    if result.status != "succeeded":
        failed = [t for t in result.trials or [] if t.get("status") != "succeeded"]
        raise SystemExit(f"the sweep {result.status}: {result.message}; {failed[:3]}")


def client_cpu() -> float:
    """CPU seconds of this process so far (its threads; not the trials' processes)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int | None) -> float | None:
    """CPU seconds of process ``pid`` so far (all its threads), or None where unknown."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_server_pid() -> int | None:
    """The pid of the server `prefect_test_harness` started (Prefect's `SubprocessASGIServer`)."""
    from prefect.server.api.server import SubprocessASGIServer

    for server in getattr(SubprocessASGIServer, "_instances", {}).values():
        process = getattr(server, "server_process", None)
        if getattr(server, "running", False) and process is not None:
            return int(process.pid)
    return None


def timed(
    fn: Callable[[], None], server_pid: int | None, settle: float
) -> tuple[float, float, float | None]:
    """Wall seconds of ``fn()``, the CPU seconds it cost this process, and the server's CPU
    seconds from its start until ``settle`` s after it (the server's services write the
    run's events after it returns), less the server's idle rate over as long."""
    idle_before = process_cpu(server_pid)
    time.sleep(1.0)
    idle_after = process_cpu(server_pid)
    server_before, client_before = process_cpu(server_pid), client_cpu()
    started = time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    client = client_cpu() - client_before
    time.sleep(settle)
    server_after = process_cpu(server_pid)
    if idle_before is None or idle_after is None or server_before is None or server_after is None:
        return wall, client, None
    idle_rate = idle_after - idle_before  # over the 1 s slept
    return wall, client, server_after - server_before - idle_rate * (wall + settle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0, help="pause before each timed run")
    parser.add_argument(
        "--server-pid", type=int, default=None, help="the server's pid, with PREFECT_API_URL set"
    )
    parser.add_argument("--json", action="store_true", help="also print the times as JSON")
    args = parser.parse_args()
    n, c = args.trials, args.concurrency
    path = sweep_file(n, c)
    server: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not os.environ.get("PREFECT_API_URL"):
        from prefect.testing.utilities import prefect_test_harness

        server = prefect_test_harness(server_startup_timeout=240)
    try:
        with server:
            mapped(4, c)  # warm-up: imports, flow registration
            mapped_subflows(4, c)
            sweep(sweep_file(4, c))
            path = sweep_file(n, c)
            cases = {
                "raw": lambda: raw(n, c),
                "mapped": lambda: mapped(n, c),
                "subflows": lambda: mapped_subflows(n, c),
                "sweep": lambda: sweep(path),
            }
            server_pid = args.server_pid or test_server_pid()
            times: dict[str, list[float]] = {name: [] for name in cases}
            client: dict[str, list[float]] = {name: [] for name in cases}
            server: dict[str, list[float | None]] = {name: [] for name in cases}
            loads: list[float] = []
            for round_ in range(args.repeat):  # interleaved: a load change hits every case
                loads.append(os.getloadavg()[0])
                names = list(cases) if round_ % 2 == 0 else list(cases)[::-1]
                for name in names:
                    time.sleep(args.settle)  # the server digests the previous run's writes
                    wall, cpu, server_cpu = timed(cases[name], server_pid, args.settle)
                    times[name].append(wall)
                    client[name].append(cpu)
                    server[name].append(server_cpu)
            medians = {}
            for name in cases:
                medians[name] = statistics.median(times[name])
                shown = ", ".join(f"{t:.2f}" for t in times[name])
                print(f"{name:>8}: median {medians[name]:.2f} s  ({shown})", flush=True)
            drain()  # the server records the last runs before it stops: no traceback
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    # paired: each round's sweep against the same round's baselines, so a load change between
    # rounds moves both sides of a pair; the verdicts use the median pair, the spread shows noise
    overheads = [1000 * (sw - r) / n for sw, r in zip(times["sweep"], times["raw"], strict=True)]
    mapped_overheads = [
        1000 * (m - r) / n for m, r in zip(times["mapped"], times["raw"], strict=True)
    ]
    subflow_ratios = [sw / f for sw, f in zip(times["sweep"], times["subflows"], strict=True)]
    mapped_ratios = [sw / m for sw, m in zip(times["sweep"], times["mapped"], strict=True)]
    client_per_trial = [
        1000 * (sw - r) / n for sw, r in zip(client["sweep"], client["raw"], strict=True)
    ]
    server_per_trial = [
        1000 * (sw - r) / n
        for sw, r in zip(server["sweep"], server["raw"], strict=True)
        if sw is not None and r is not None
    ]
    per_trial = statistics.median(overheads)
    subflows = statistics.median(subflow_ratios)
    print(
        f"{n} trials, concurrency {c}, {args.repeat} paired rounds (median [min, max]), "
        f"load {', '.join(f'{load:.1f}' for load in loads)}"
    )
    print(f"mapped flow overhead: {_spread(mapped_overheads, ' ms/trial')} over raw processes")
    print(f"sweep overhead:       {_spread(overheads, ' ms/trial')} over raw processes")
    print(f"sweep client CPU:     {_spread(client_per_trial, ' ms/trial')} over raw processes")
    if server_per_trial:
        print(f"sweep server CPU:     {_spread(server_per_trial, ' ms/trial')} over raw processes")
    else:
        print("sweep server CPU:     not measured (no server pid: pass --server-pid)")
    print(
        "sweep / mapped subflows (a child flow run per trial, as the sweep): "
        f"{_spread(subflow_ratios, 'x', 2)}"
    )
    print(
        "sweep / task-mapped flow (no flow run per trial; for scale): "
        f"{_spread(mapped_ratios, 'x', 2)}"
    )
    verdict = "met" if per_trial <= TARGET_MS_PER_TRIAL else "MISSED"
    print(f"target sweep overhead <= {TARGET_MS_PER_TRIAL:g} ms/trial: {verdict}")
    verdict = "met" if subflows <= TARGET_RATIO else "MISSED"
    print(f"target sweep <= {TARGET_RATIO:g}x the mapped flow of child flow runs: {verdict}")
    if args.json:
        print(
            json.dumps(
                {
                    "trials": n,
                    "concurrency": c,
                    "times_s": times,
                    "overhead_ms_per_trial": overheads,
                    "client_cpu_ms_per_trial": client_per_trial,
                    "server_cpu_ms_per_trial": server_per_trial,
                    "sweep_over_subflows": subflow_ratios,
                    "overhead_median": per_trial,
                    "ratio_median": subflows,
                }
            )
        )


def _spread(values: list[float], unit: str, digits: int = 1) -> str:
    """``median [min, max]`` of paired values, with ``unit``."""
    low, high = min(values), max(values)
    return f"{statistics.median(values):.{digits}f}{unit} [{low:.{digits}f}, {high:.{digits}f}]"


if __name__ == "__main__":
    main()
