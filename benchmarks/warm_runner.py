"""``polyaxon-prefect run`` of a no-op job through the background server's warm runner, against
the same command run in the CLI's own process (``POLYAXON_PREFECT_RUNNER=0``) and a
hand-written Prefect flow (``python flow.py``: one task running the same no-op process) on the
same running server.

A background server is started in a temporary Prefect home (``polyaxon-prefect server start``,
a free port) and the script waits for its runner. Every case runs as a fresh process, the way a
user types it, interleaved (the order rotates each round) so that a noisy machine slows all
alike, after one untimed warm-up each. For both ``run`` cases it also times the first line on
stderr after the process starts (what a user sees after Enter). The report gives the load
average, medians and minimums, and the ratios against the targets of issue 37: a no-op job
<= 0.5x the hand-written flow, the first line < 0.3 s.

Usage::

    python benchmarks/warm_runner.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RATIO_TARGET = 0.5
FIRST_LINE_TARGET = 0.3
BIN = Path(sys.executable).parent
NOOP = (
    "version: 1.1\nkind: component\nname: noop\n"
    "run: {kind: job, container: {command: [python, -c, pass]}}\n"
)
HANDWRITTEN = """\
import subprocess, sys
from prefect import flow, task

@task
def noop():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@flow
def handwritten():
    noop()

handwritten()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli_timed(file: Path, env: dict[str, str]) -> tuple[float, float]:
    """One ``polyaxon-prefect run`` as a fresh process: seconds to its first line on stderr and
    to its end."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    first_line = time.perf_counter() - started
    _out, rest = process.communicate(timeout=600)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"the CLI failed (exit {process.returncode}):\n{(first + rest)[-2000:]}")
    return first_line, wall


def _hand_timed(script: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def _wait_for_runner(home: Path, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(str(home / "polyaxon-prefect-runner.sock"))
                return
            except OSError:
                time.sleep(0.5)
    raise SystemExit("the server's warm runner did not start (see its log in the Prefect home)")


def _uses_runner(env: dict[str, str], file: Path) -> bool:
    code = (
        "import sys\nfrom polyaxon_prefect.cli import main\n"
        f"rc = main(['run', '-f', {str(file)!r}])\n"
        "sys.exit(rc or (3 if 'prefect' in sys.modules else 0))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    return done.returncode == 0


def _show(name: str, times: list[float]) -> None:
    print(
        f"  {name:<34} median {statistics.median(times):6.3f} s  min {min(times):6.3f} s  "
        f"({len(times)} runs)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="warm-runner-bench-"))
    home = work / "prefect"
    port = _free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(work / "artifacts"),
        "POLYAXON_PREFECT_SERVER_PORT": str(port),
        "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "600",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "POLYAXON_PREFECT_SESSION"):
        env.pop(name, None)
    cold_env = {**env, "POLYAXON_PREFECT_RUNNER": "0"}
    hand_env = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
    file = work / "noop.yaml"
    file.write_text(NOOP, encoding="utf-8")
    script = work / "flow.py"
    script.write_text(HANDWRITTEN, encoding="utf-8")
    subprocess.run([str(BIN / "polyaxon-prefect"), "server", "start"], env=env, check=True)
    try:
        _wait_for_runner(home)
        if not _uses_runner(env, file):
            raise SystemExit("`run` did not go through the warm runner (its CLI imported Prefect)")
        print("warm `run`: the CLI's process imported no prefect")
        _cli_timed(file, env), _cli_timed(file, cold_env), _hand_timed(script, hand_env)
        warm, cold, hand, warm_first, cold_first = [], [], [], [], []
        for round_ in range(args.runs):
            cases = ["warm", "cold", "hand"]
            cases = cases[round_ % 3 :] + cases[: round_ % 3]
            for case in cases:
                if case == "warm":
                    line, wall = _cli_timed(file, env)
                    warm_first.append(line)
                    warm.append(wall)
                elif case == "cold":
                    line, wall = _cli_timed(file, cold_env)
                    cold_first.append(line)
                    cold.append(wall)
                else:
                    hand.append(_hand_timed(script, hand_env))
    finally:
        subprocess.run(
            [str(BIN / "polyaxon-prefect"), "server", "stop"], env=env, capture_output=True
        )
    print(f"load average: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    _show("run, warm runner: wall", warm)
    _show("run, warm runner: first line", warm_first)
    _show("run, CLI's own process: wall", cold)
    _show("run, CLI's own process: first line", cold_first)
    _show("hand-written flow (python flow.py)", hand)
    ratio = statistics.median(warm) / statistics.median(hand)
    best = min(w / h for w, h in zip(warm, hand, strict=True))
    cold_ratio = statistics.median(cold) / statistics.median(hand)
    first = statistics.median(warm_first)
    print(
        f"no-op job, warm runner: {ratio:.2f}x the hand-written flow (best round {best:.2f}x; "
        f"target <= {RATIO_TARGET}x: {'met' if ratio <= RATIO_TARGET else 'NOT met'}); "
        f"the CLI's own process: {cold_ratio:.2f}x"
    )
    print(
        f"first line, warm runner: {first:.3f} s (target < {FIRST_LINE_TARGET} s: "
        f"{'met' if first < FIRST_LINE_TARGET else 'NOT met'}); the CLI's own process: "
        f"{statistics.median(cold_first):.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
