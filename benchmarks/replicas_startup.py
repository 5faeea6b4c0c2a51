"""Wall time to a 4-replica PyTorch all-reduce: ``polyaxon-prefect run`` against ``torchrun``.

The same script (``examples/distributed/ddp.py``: every rank adds rank + 1, all see the sum)
runs as

- ``torchrun``: ``torchrun --standalone --nproc-per-node 4 ddp.py`` (4 local processes);
- ``polyaxon-prefect run``: a ``pytorchjob`` with a master and 3 workers on the local backend,
  one process per replica with the operator's ``MASTER_ADDR``/``RANK``/``WORLD_SIZE``, through
  the CLI as a fresh process against a reused ``prefect server start`` on loopback (server mode:
  a Prefect server started once, as recommended for repeated local runs; its start is not timed).

Both are timed end to end as fresh processes, interleaved, ``--runs`` times each; the ratio of
the medians is printed against the target (<= 1.3x).

Usage::

    python benchmarks/replicas_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
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

TARGET = 1.3
SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "distributed" / "ddp.py"
COMPONENT = """\
version: 1.1
kind: component
name: ddp-bench
outputs: [{{name: total, type: float}}, {{name: world_size, type: int}}]
run:
  kind: pytorchjob
  master: {{replicas: 1, container: {{command: [{python}, {script}]}}}}
  worker: {{replicas: 3, container: {{command: [{python}, {script}]}}}}
"""


def _timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-replicas-"))
    env = {**os.environ, "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(work / "artifacts")}
    file = work / "ddp.yaml"
    file.write_text(COMPONENT.format(python=sys.executable, script=SCRIPT), encoding="utf-8")
    torchrun = [
        str(Path(sys.executable).with_name("torchrun")),
        "--standalone",
        "--nproc-per-node",
        "4",
        str(SCRIPT),
    ]
    cli = [str(Path(sys.executable).with_name("polyaxon-prefect")), "run", "-f", str(file)]
    times: dict[str, list[float]] = {"torchrun": [], "polyaxon-prefect run": []}
    try:
        with _prefect_server(work) as url:
            server_env = {**env, "PREFECT_API_URL": url}
            _timed([*cli, "--json"], server_env, work)  # warm-up: the server's first writes
            for _ in range(args.runs):
                times["torchrun"].append(_timed(torchrun, env, work))
                times["polyaxon-prefect run"].append(_timed([*cli, "--json"], server_env, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n4-replica gloo all-reduce, {args.runs} runs each, python {sys.version.split()[0]}")
    for name, values in times.items():
        print(f"{name:<22} median {statistics.median(values):6.2f} s   min {min(values):6.2f} s")
    ratio = statistics.median(times["polyaxon-prefect run"]) / statistics.median(times["torchrun"])
    verdict = "holds" if ratio <= TARGET else "missed"
    print(
        f"ratio polyaxon-prefect / torchrun (medians): {ratio:.2f}x "
        f"(target <= {TARGET}x: {verdict})"
    )
    print("server mode: a reused `prefect server start` on loopback (SQLite), CLI as a new process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
