"""Wall time of a GPU sweep on one GPU: queued (the default) against oversubscribed.

A grid sweep of ``--trials`` trials at concurrency 2, each asking for 1 GPU, on a machine of one
(simulated: ``CUDA_VISIBLE_DEVICES=0``), runs twice through ``polyaxon-prefect run`` against a
reused ``prefect server start`` on loopback:

- queued: the default; the GPU pool runs one trial at a time on the one GPU;
- oversubscribed: ``POLYAXON_PREFECT_GPU_SHARING=2``, two trials on the GPU at once (what every
  sweep did before the pool, silently).

What it models (there is no GPU here): each trial is ``--work`` seconds of GPU work when alone,
done in 20 ms ticks. While ``n`` trials are on the GPU (each trial marks itself in a shared
folder while it works), each advances at ``speedup(n) / n`` of its speed alone, where
``speedup(2) = 1.14``: the combined throughput of two small training jobs sharing an H100,
measured (each ran at 0.56-0.58x of its speed alone). So the model is time-sharing at that
measured efficiency, for a model small enough that both fit in the GPU's memory; it does not
model running out of memory, which is what a model filling the GPU would do when shared.

Printed: each mode's wall time and mean trial time (first GPU tick to done), and the ratio
oversubscribed / queued of both.

Usage::

    python benchmarks/gpu_sweep.py [--trials 4] [--work 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from job_overhead import _prefect_server

CLI = [sys.executable, "-m", "polyaxon_prefect.cli"]
SPEEDUP = {1: 1.0, 2: 1.14}
"""Combined throughput of ``n`` jobs on one GPU, relative to one alone (measured for 2)."""

TRIAL = """\
import json, os, sys, time, uuid
from pathlib import Path
folder, work, out = Path(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
speedup = {speedup}
me = folder / uuid.uuid4().hex
me.touch()
start, done = time.time(), 0.0
try:
    while done < work:
        time.sleep(0.02)
        n = max(1, len(list(folder.iterdir())))
        done += 0.02 * speedup.get(n, speedup[max(speedup)]) / n
finally:
    me.unlink()
out.mkdir(exist_ok=True)
(out / me.name).write_text(json.dumps({{"start": start, "end": time.time()}}))
"""

SWEEP = """\
version: 1.1
kind: operation
name: gpu-sweep-bench
matrix:
  kind: grid
  concurrency: 2
  params: {{i: {{kind: range, value: [0, {trials}, 1]}}}}
component:
  name: gpu-trial
  inputs: [{{name: i, type: int}}]
  run:
    kind: job
    container:
      resources: {{limits: {{nvidia.com/gpu: 1}}}}
      command: [{python}, {script}, {busy}, '{work}', {out}]
"""


def _sweep(work: Path, env: dict[str, str], mode: str) -> tuple[float, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [*CLI, "run", "-f", str(work / "sweep.yaml"), "--json"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{mode}: the sweep failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    trials = [json.loads(p.read_text()) for p in (work / "out").glob("*")]
    for path in (work / "out").glob("*"):
        path.unlink()
    return elapsed, statistics.mean(t["end"] - t["start"] for t in trials)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--work", type=float, default=3.0, help="seconds of GPU work alone")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-gpu-sweep-"))
    (work / "busy").mkdir()
    script = work / "trial.py"
    script.write_text(TRIAL.format(speedup=SPEEDUP), encoding="utf-8")
    (work / "sweep.yaml").write_text(
        SWEEP.format(
            trials=args.trials,
            python=sys.executable,
            script=script,
            busy=work / "busy",
            work=args.work,
            out=work / "out",
        ),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(work / "artifacts"),
        "POLYAXON_PREFECT_GPU_LOCKS": str(work / "locks"),
        "CUDA_VISIBLE_DEVICES": "0",
    }
    env.pop("POLYAXON_PREFECT_GPU_SHARING", None)
    results: dict[str, tuple[float, float]] = {}
    try:
        with _prefect_server(work) as url:
            env["PREFECT_API_URL"] = url
            results["queued"] = _sweep(work, env, "queued")
            shared = {**env, "POLYAXON_PREFECT_GPU_SHARING": "2"}
            results["oversubscribed"] = _sweep(work, shared, "oversubscribed")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(
        f"\ngrid sweep of {args.trials} 1-GPU trials, concurrency 2, 1 simulated GPU, "
        f"{args.work:g} s of GPU work per trial alone (2 on one GPU: {SPEEDUP[2]}x throughput)"
    )
    for mode, (wall, trial) in results.items():
        print(f"{mode:<15} wall {wall:6.2f} s   mean trial {trial:5.2f} s")
    (q_wall, q_trial), (o_wall, o_trial) = results["queued"], results["oversubscribed"]
    print(
        f"ratio oversubscribed / queued: wall {o_wall / q_wall:.2f}x, "
        f"mean trial {o_trial / q_trial:.2f}x"
    )
    print("server mode: a reused `prefect server start` on loopback (SQLite), CLI as a new process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
