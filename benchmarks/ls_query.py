"""What ``ls -q QUERY --sort SPEC`` costs over a plain ``ls --limit 200``, on 200 recorded runs.

The runs are recorded through Prefect's client API as finished jobs leave them (their flow run
and their report artifact: `polyaxon_prefect.testing.recorded_runs`), so 200 of them take
seconds, not the minutes 200 real jobs would. Against a fresh test server
(``prefect_test_harness``) unless ``PREFECT_API_URL`` is set.

Timed, ``--runs`` times each, alternately, after one warm-up of each:

- ``ls --limit 200``: `list_runs` (the runs and their kinds, in one artifact query);
- ``ls -q ... --sort ...``: `query_runs` with a query that reads metrics and params (so every
  report is read) and a sort by a metric, over every recorded run;
- the same two as CLI processes (``python -m polyaxon_prefect.cli ls ...``), imports included.

Target: the query in under 2 s. Usage::

    python benchmarks/ls_query.py [--count 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

QUERY = "status:succeeded|failed, metrics.loss:<=0.5, params.lr:>0.005, name:~%mlp%"
SORT = "-metrics.loss, name"
TARGET_S = 2.0


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _cli(api: str, *args: str) -> Callable[[], object]:
    env = {**os.environ, "PREFECT_API_URL": api}

    def run() -> object:
        return subprocess.run(
            [sys.executable, "-m", "polyaxon_prefect.cli", "ls", *args],
            env=env,
            check=True,
            capture_output=True,
        )

    return run


def _measure(count: int, runs: int) -> dict[str, list[float]]:
    from prefect.settings import PREFECT_API_URL

    from polyaxon_prefect.prefect.runs._runs import list_runs
    from polyaxon_prefect.prefect.runs._runs_query import query_runs
    from polyaxon_prefect.query import parse_query, parse_sort
    from polyaxon_prefect.testing.recorded_runs import record_runs, sample_runs

    api = str(PREFECT_API_URL.value())
    started = time.perf_counter()
    record_runs(api, sample_runs(count))
    print(f"recorded {count} runs in {time.perf_counter() - started:.1f} s")
    conditions, keys = parse_query(QUERY), parse_sort(SORT)
    cases: dict[str, Callable[[], object]] = {
        f"ls --limit {count}": lambda: list_runs(api, limit=count),
        "ls -q --sort": lambda: query_runs(api, conditions, keys, limit=count),
        f"cli ls --limit {count}": _cli(api, "--limit", str(count), "--json"),
        "cli ls -q --sort": _cli(api, "-q", QUERY, "--sort", SORT, "--limit", str(count)),
    }
    kept = query_runs(api, conditions, keys, limit=count)
    print(f"the query keeps {len(kept)} of {count} runs")
    for case in cases.values():  # warm-up
        case()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            times[name].append(_timed(case))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    server: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not os.environ.get("PREFECT_API_URL"):
        from prefect.testing.utilities import prefect_test_harness

        server = prefect_test_harness(server_startup_timeout=60)
    with server:
        times = _measure(args.count, args.runs)
    print(f"\n{args.count} runs, query `{QUERY}`, sort `{SORT}`, median of {args.runs}")
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, value in median.items():
        print(f"  {name:<22} {value:6.3f} s   (min {min(times[name]):.3f} s)")
    for side in ("", "cli "):
        plain, query = f"{side}ls --limit {args.count}", f"{side}ls -q --sort"
        ratio = median[query] / median[plain]
        best = min(times[query]) / min(times[plain])
        where = side or "in-process "
        print(f"  ratio {where}query / plain: {ratio:.2f}x (of the minima {best:.2f}x)")
    cases = (("ls -q --sort", "in-process"), ("cli ls -q --sort", "CLI, imports included"))
    for name, label in cases:
        verdict = "met" if median[name] < TARGET_S else "MISSED"
        print(f"target: ls -q under {TARGET_S:.0f} s ({label}): {verdict} ({median[name]:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
