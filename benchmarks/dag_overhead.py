"""What the DAG scheduler costs: a 200-op Polyaxon DAG against a hand-written Prefect flow.

Both launch the same 200 no-op processes (``python -c pass`` by default) with the same
concurrency, in the same process, against the same Prefect server (a fresh test server unless
``PREFECT_API_URL`` is set: a temporary server per ``run`` would be timed on one side only),
with flow heartbeats off:

- ``polyaxon``: ``polyaxon_prefect.run(dag.yaml)``: loading and validating the file, planning,
  a task run per op (prepared job, run directory, outputs read back), the scheduler's trigger
  decisions, the markdown artifact. The DAG sets ``cache: {disable: true}`` (Polyaxon turns the
  cache on inside DAGs; the hand-written flow has none).
- ``prefect``: a ``@flow`` that submits one ``@task`` per process (``subprocess.run``), each
  after its upstream with ``wait_for`` (the chain) or all at once on a
  ``ThreadPoolTaskRunner(max_workers=concurrency)`` (the fan-out).

Each timed run starts after ``--settle`` seconds of pause: right after a 200-op run, the
server is still writing its events, and SQLite answers the next run's first request ``503``,
which costs Prefect's client a 2 s back-off (on whichever side comes second). ``--settle 0``
shows that effect.

Shapes: ``chain`` (op i depends on op i-1) and ``fanout`` (one root, then 199 ops that depend on
it, ``concurrency`` at a time). Each case is run ``--runs`` times, alternating the two sides;
the report gives medians and the ratio polyaxon/prefect, and a ``met``/``MISSED`` line per
target: the chain at most 1.0x the hand-written flow, the fan-out at most 1.5x. The load average
before each timed run is printed with the results (the machines are shared), and so is the CPU
each side costs per op, in this process (all its threads, not the ops' processes) and in the
test server (from the run's start to the end of the settle after it, Linux only): on a busy
machine the wall times move by seconds from one run to the next, the CPU far less. For each
polyaxon run it prints the seconds before its first op and after its last (from the DAG's
``ops.json``): a stall of seconds on a short DAG shows there.
``--profile SHAPE`` prints a CPU profile of one polyaxon run of that shape, over every thread
the run starts (the artifacts' pool included). ``--params`` gives each op a param (each task
of the hand-written flow has one), so that each op's params and outputs table is written: an
op with no param, output or metric has none.

Usage::

    python benchmarks/dag_overhead.py [--ops 200] [--concurrency 8] [--runs 3] [--command true]
        [--profile chain] [--settle 3] [--params]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import logging
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from _drain import drain

TARGETS = {"chain": 1.0, "fanout": 1.5}
_SERVER_STARTED_HERE = False


def _dag_file(
    folder: Path, shape: str, ops: int, concurrency: int, argv: list[str], params: bool = False
) -> Path:
    operations: list[dict[str, Any]] = []
    for i in range(ops):
        op: dict[str, Any] = {"name": f"op{i}", "dagRef": "noop"}
        if params:  # each op's table has a row to show, so it is written (`--params`)
            op["params"] = {"i": {"value": i}}
        if i and shape == "chain":
            op["dependencies"] = [f"op{i - 1}"]
        elif i and shape == "fanout":
            op["dependencies"] = ["op0"]
        operations.append(op)
    noop: dict[str, Any] = {"name": "noop", "run": {"kind": "job", "container": {"command": argv}}}
    if params:
        noop["inputs"] = [{"name": "i", "type": "int"}]
    run: dict[str, Any] = {"kind": "dag", "components": [noop], "operations": operations}
    if shape == "fanout":
        run["concurrency"] = concurrency
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": f"bench-{shape}",
        "cache": {"disable": True},
        "run": run,
    }
    path = folder / f"{shape}.yaml"
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")
    return path


def _hand_written(shape: str, ops: int, concurrency: int, argv: list[str]) -> Any:
    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    @task
    def launch(i: int) -> int:
        return subprocess.run(argv, check=True).returncode

    workers = concurrency if shape == "fanout" else 1

    @flow(name=f"hand-{shape}", task_runner=ThreadPoolTaskRunner(max_workers=workers))
    def hand() -> None:
        root = launch.with_options(task_run_name="op0").submit(0)
        root.wait()
        futures = [root]
        for i in range(1, ops):
            upstream = futures[-1] if shape == "chain" else root
            future = launch.with_options(task_run_name=f"op{i}").submit(i, wait_for=[upstream])
            if shape == "chain":
                future.wait()
            futures.append(future)
        for future in futures:
            future.result()

    return hand


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--command", default="python -c pass", help="the no-op process")
    parser.add_argument("--shapes", default="chain,fanout")
    parser.add_argument(
        "--params",
        action="store_true",
        help="give each op a param (the hand-written flow's tasks have one): its params and "
        "outputs table is then written (an op with none has no table)",
    )
    parser.add_argument(
        "--profile", metavar="SHAPE", default=None, help="profile one polyaxon run of SHAPE"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds of pause before each timed run (see the module's docstring)",
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-dag-bench-"))
    os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(work / "artifacts")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    command = args.command.split()
    if command[0] == "python":
        command[0] = sys.executable
    shapes = [s for s in args.shapes.split(",") if s]
    server: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not os.environ.get("PREFECT_API_URL"):
        global _SERVER_STARTED_HERE
        _SERVER_STARTED_HERE = True
        from prefect.testing.utilities import prefect_test_harness

        server = prefect_test_harness(server_startup_timeout=240)
    try:
        with server:
            results = _measure(shapes, args, work, command)
            drain()  # the server records the last runs before it stops: no traceback
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(
        f"\n{args.ops} ops of `{args.command}`, fan-out concurrency {args.concurrency}, "
        f"{args.runs} runs each, python {sys.version.split()[0]}"
    )
    for shape in shapes:
        ours_m = statistics.median(results[(shape, "polyaxon")])
        theirs_m = statistics.median(results[(shape, "prefect")])
        ratio = ours_m / theirs_m
        print(
            f"{shape:<7} polyaxon {ours_m:7.2f} s   hand-written prefect {theirs_m:7.2f} s   "
            f"ratio {ratio:5.2f}   ({(ours_m - theirs_m) / args.ops * 1000:6.1f} ms/op)"
        )
        for side in ("polyaxon", "prefect"):
            runs = ", ".join(f"{t:.2f}" for t in results[(shape, side)])
            backoffs = results.get((shape, side + " 503"), [])
            loads = ", ".join(f"{load:.1f}" for load in results.get((shape, side + " load"), []))
            print(
                f"        {side:<8} runs: {runs} s; 503 back-offs: {int(sum(backoffs))}; "
                f"load: {loads}"
            )
        run_edges = results.get((shape, "polyaxon edges"))
        if run_edges:
            shown = ", ".join(f"{e:.2f}" for e in run_edges[1:])  # the warm-up's left out
            print(f"        polyaxon before its first op and after its last: {shown} s")
        print("        CPU per op (medians; less sensitive to the load than the wall times):")
        for side in ("polyaxon", "prefect"):
            cpu = statistics.median(results[(shape, side + " cpu")]) / args.ops * 1000
            server = results.get((shape, side + " server"))
            served = f"{statistics.median(server) / args.ops * 1000:5.1f} ms" if server else "  -"
            print(f"        {side:<8} this process {cpu:5.1f} ms, the server {served}")
        target = TARGETS.get(shape)
        if target is not None:
            verdict = "met" if ratio <= target else "MISSED"
            print(f"target {shape} <= {target}x the hand-written flow: {verdict} ({ratio:.2f}x)")
    return 0


class _BackoffCounter(logging.Handler):
    """Counts the client's back-offs (a ``503`` from the server, then a 2 s sleep)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Another attempt will be made" in record.getMessage():
            self.count += 1


def _measure(
    shapes: list[str], args: argparse.Namespace, work: Path, command: list[str]
) -> dict[tuple[str, str], list[float]]:
    """Wall times of each side per shape, the two sides alternating first."""
    import polyaxon_prefect.prefect as pp
    from polyaxon_prefect.prefect._settings import local_run_settings

    results: dict[tuple[str, str], list[float]] = {}
    backoffs = _BackoffCounter()
    client_logger = logging.getLogger("prefect.client")
    client_logger.addHandler(backoffs)
    client_logger.setLevel(logging.DEBUG)  # where Prefect says it backs off
    for shape in shapes:
        path = _dag_file(work, shape, args.ops, args.concurrency, command, args.params)
        hand = _hand_written(shape, args.ops, args.concurrency, command)

        def ours(path: Path = path, shape: str = shape) -> None:
            started = time.time()
            result = pp.run(path)
            ended = time.time()
            if result.status != "succeeded":
                raise SystemExit(f"the DAG failed: {result.message}")
            edges = _edges(result.artifacts_path, started, ended)
            if edges is not None:
                results.setdefault((shape, "polyaxon edges"), []).append(edges)

        def theirs(hand: Any = hand) -> None:
            with local_run_settings():
                hand()

        ours()  # warm-up (imports, flow registration)
        theirs()
        if args.profile == shape:
            from polyaxon_prefect.prefect import _artifacts

            _artifacts._POOL = None  # its threads start within the profiled run: seen
            _profile_run(ours)
        time.sleep(args.settle)  # the server digests the warm-up's writes
        for round_ in range(args.runs):
            order: list[tuple[str, Callable[[], None]]] = [("polyaxon", ours), ("prefect", theirs)]
            if round_ % 2:
                order.reverse()
            for side, fn in order:
                backoffs.count = 0
                results.setdefault((shape, side + " load"), []).append(os.getloadavg()[0])
                cpu, server = time.process_time(), _server_cpu()
                started = time.perf_counter()
                fn()
                results.setdefault((shape, side), []).append(time.perf_counter() - started)
                results.setdefault((shape, side + " 503"), []).append(backoffs.count)
                results.setdefault((shape, side + " cpu"), []).append(time.process_time() - cpu)
                time.sleep(args.settle)  # the server digests this run's writes (its CPU too)
                if server is not None and (after := _server_cpu()) is not None:
                    results.setdefault((shape, side + " server"), []).append(after - server)
    return results


def _edges(run_path: str | None, started: float, ended: float) -> float | None:
    """Seconds of a run spent before its first op started plus after its last op ended (its
    flow run's start and end, its views sent): from the DAG's own `ops.json`. A stall there
    (a request waiting on a busy server) is a whole run's worth of ops on a short DAG."""
    if run_path is None:
        return None
    try:
        ops = json.loads((Path(run_path) / "ops.json").read_text()).values()
        first = min(op["started_at"] for op in ops)
        last = max(op["finished_at"] for op in ops)
    except (OSError, ValueError, KeyError):
        return None
    return (first - started) + (ended - last)


def _server_cpu() -> float | None:
    """CPU seconds so far of this process's live child processes (the test server; the
    runs' own processes have ended), from ``/proc``; None where there is none to read (another
    system, or a server given by ``PREFECT_API_URL``)."""
    if os.environ.get("PREFECT_API_URL") and not _SERVER_STARTED_HERE:
        return None
    total, found = 0.0, False
    me = str(os.getpid())
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:  # its parent; then utime and stime, in clock ticks
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            found = True
    return total if found else None


def _profile_run(fn: Any) -> None:
    """Profile one run of ``fn`` by CPU time, in every thread it starts (the ops run in the
    task runner's threads, their reports in a pool's): cumulative CPU per function."""
    profilers = [cProfile.Profile(time.thread_time)]
    start = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profiler = cProfile.Profile(time.thread_time)
        profilers.append(profiler)
        profiler.runcall(start, self)

    threading.Thread.run = run  # type: ignore[method-assign]
    try:
        profilers[0].runcall(fn)
    finally:
        threading.Thread.run = start  # type: ignore[method-assign]
    stats = pstats.Stats(profilers[0])
    for profiler in profilers[1:]:
        with contextlib.suppress(TypeError):  # a thread that profiled nothing
            stats.add(profiler)
    seen = len(profilers)
    print(f"CPU profile of one run ({seen} threads; the pools started before it are not seen)")
    stats.sort_stats("cumulative").print_stats(60)


if __name__ == "__main__":
    sys.exit(main())
