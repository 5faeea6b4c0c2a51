"""What a wide DAG costs after its last op: a 5,000-op fan-out as a ``polyaxon-prefect run``
process, against a hand-written Prefect flow process launching the same processes.

Both sides are fresh processes on the same Prefect server (a test server started here unless
``PREFECT_API_URL`` is set), alternating, each after ``--settle`` seconds of pause:

- ``polyaxon``: ``polyaxon-prefect run -f fanout.yaml --json``: one root op, then ``--ops - 1``
  ops that depend on it, ``--concurrency`` at a time, each a no-op process (``true``);
- ``prefect``: a ``@flow`` submitting one ``@task`` per process (``subprocess.run``) on a
  ``ThreadPoolTaskRunner(max_workers=concurrency)``, the root first.

Per run it measures the wall time, the seconds from the last op's end to the process's exit
(the tail: the DAG's ``ops.json`` says when each op ended; the hand-written tasks write their
end times to a file) and the process's peak RSS (``wait4``). Targets: the tail at most 2 s
(no work after the last op that grows with the op count), the RSS per op bounded.

``--code DIR`` also runs, interleaved, the ``polyaxon`` side with the package found in DIR
(another version's source tree, e.g. ``git archive <commit> | tar -x -C DIR``): before and
after a change, on the same server and load.

Usage::

    python benchmarks/fanout_dag.py [--ops 5000] [--concurrency 8] [--runs 1] [--settle 3]
        [--code DIR] [--no-prefect]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import yaml
from _drain import drain

TARGET_TAIL_S = 2.0
CLI = Path(sys.executable).with_name("polyaxon-prefect")

HAND_WRITTEN = textwrap.dedent(
    """
    import json, subprocess, sys, threading, time
    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    ops, concurrency, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ends, lock = [], threading.Lock()

    @task
    def launch(i: int) -> int:
        code = subprocess.run(["true"], check=True).returncode
        with lock:
            ends.append(time.time())
        return code

    @flow(name="hand-fanout", task_runner=ThreadPoolTaskRunner(max_workers=concurrency))
    def hand() -> None:
        root = launch.with_options(task_run_name="op0").submit(0)
        root.wait()
        futures = [
            launch.with_options(task_run_name=f"op{i}").submit(i, wait_for=[root])
            for i in range(1, ops)
        ]
        for future in [root, *futures]:
            future.result()

    hand()
    with open(out, "w") as f:
        json.dump(max(ends), f)
    """
)


def _dag_file(folder: Path, ops: int, concurrency: int) -> Path:
    operations: list[dict[str, Any]] = [{"name": "op0", "dagRef": "noop"}]
    operations += [
        {"name": f"op{i}", "dagRef": "noop", "dependencies": ["op0"]} for i in range(1, ops)
    ]
    dag = {
        "version": 1.1,
        "kind": "component",
        "name": "bench-fanout",
        "cache": {"disable": True},
        "run": {
            "kind": "dag",
            "concurrency": concurrency,
            "components": [
                {"name": "noop", "run": {"kind": "job", "container": {"command": ["true"]}}}
            ],
            "operations": operations,
        },
    }
    path = folder / "fanout.yaml"
    path.write_text(yaml.safe_dump(dag, sort_keys=False), encoding="utf-8")
    return path


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Run ``argv`` in ``cwd``: its start, its exit (epoch seconds), its peak RSS (KiB), its
    stdout."""
    started = time.time()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        ended = time.time()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited {proc.returncode}: {stdout[-2000:]}")
    return started, ended, usage.ru_maxrss, stdout


def _polyaxon(path: Path, env: dict[str, str], code: str | None) -> dict[str, float]:
    env = dict(env)
    if code:
        env["PYTHONPATH"] = code
    argv = [sys.executable, "-c", "from polyaxon_prefect.cli import main; main()"]
    # in the benchmark's folder: `python -c` puts the working folder first on the path, and a
    # checkout's own package there would be imported instead of `--code`'s
    argv += ["run", "-f", str(path), "--json"]
    started, ended, rss, stdout = _timed(argv, env, path.parent)
    result = json.loads(stdout[stdout.index("{") :])
    if result.get("status") != "succeeded":
        raise SystemExit(f"the DAG {result.get('status')}: {result.get('message')}")
    run_path = _run_path(Path(env["POLYAXON_PREFECT_ARTIFACTS_ROOT"]), result["uuid"])
    ops = json.loads((run_path / "ops.json").read_text())
    if len(ops) != len(result["ops"]):
        raise SystemExit(f"ops.json holds {len(ops)} ops of {len(result['ops'])}")
    last = max(op["finished_at"] for op in ops.values())
    return {"wall": ended - started, "tail": ended - last, "rss_mb": rss / 1024}


def _run_path(root: Path, uuid: str) -> Path:
    for found in root.glob(f"*/{uuid}/ops.json"):
        return found.parent
    raise SystemExit(f"no ops.json for run {uuid} under {root}")


def _prefect(ops: int, concurrency: int, env: dict[str, str], work: Path) -> dict[str, float]:
    script, out = work / "hand.py", work / "hand-ends.json"
    script.write_text(HAND_WRITTEN, encoding="utf-8")
    started, ended, rss, _ = _timed(
        [sys.executable, str(script), str(ops), str(concurrency), str(out)], env, work
    )
    last = json.loads(out.read_text())
    return {"wall": ended - started, "tail": ended - last, "rss_mb": rss / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--code", default=None, help="also run this source tree's package")
    parser.add_argument("--no-prefect", action="store_true", help="skip the hand-written flow")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-fanout-bench-"))
    env = dict(os.environ)
    env.update(
        POLYAXON_PREFECT_ARTIFACTS_ROOT=str(work / "artifacts"),
        PREFECT_LOGGING_LEVEL=env.get("PREFECT_LOGGING_LEVEL", "WARNING"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_TELEMETRY_ENABLED="false",
    )
    path = _dag_file(work, args.ops, args.concurrency)
    sides: dict[str, Any] = {"polyaxon": lambda: _polyaxon(path, env, None)}
    if args.code:
        sides["polyaxon (--code)"] = lambda: _polyaxon(path, env, args.code)
    if not args.no_prefect:
        sides["prefect"] = lambda: _prefect(args.ops, args.concurrency, env, work)
    server: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not env.get("PREFECT_API_URL"):
        from prefect.testing.utilities import prefect_test_harness

        server = prefect_test_harness(server_startup_timeout=240)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    loads: list[float] = []
    try:
        with server:
            if not env.get("PREFECT_API_URL"):
                from prefect.settings import PREFECT_API_URL

                env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
            for round_ in range(args.runs):
                names = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
                for name in names:
                    time.sleep(args.settle)  # the server digests the previous run's writes
                    loads.append(os.getloadavg()[0])
                    results[name].append(sides[name]())
                    row = results[name][-1]
                    print(
                        f"{name:<18} wall {row['wall']:7.1f} s  tail {row['tail']:6.2f} s  "
                        f"peak RSS {row['rss_mb']:6.0f} MB  (load {loads[-1]:.1f})",
                        flush=True,
                    )
            drain()  # the server records the last runs before it stops: no traceback
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{args.ops}-op fan-out of `true`, concurrency {args.concurrency}, {args.runs} run(s) "
        f"each, load {min(loads):.1f}-{max(loads):.1f}"
    )
    for name, rows in results.items():
        med = {key: statistics.median(r[key] for r in rows) for key in ("wall", "tail", "rss_mb")}
        print(
            f"{name:<18} wall {med['wall']:7.1f} s  last op -> exit {med['tail']:6.2f} s  "
            f"peak RSS {med['rss_mb']:6.0f} MB ({med['rss_mb'] * 1024 / args.ops:.1f} KB/op)"
        )
    tail = statistics.median(r["tail"] for r in results["polyaxon"])
    verdict = "met" if tail <= TARGET_TAIL_S else "MISSED"
    print(f"target last op -> run end <= {TARGET_TAIL_S:g} s: {verdict} ({tail:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
