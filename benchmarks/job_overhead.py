"""What running a job through Prefect costs: ``polyaxon-prefect run`` against the bare process.

The job is a no-op (a component whose command is ``python -c pass``), so everything measured
beyond the bare process is overhead: loading and preparing the file, the flow and task runs,
the API calls, and for the CLI, Python and Prefect imports plus the ephemeral server that a
process without ``PREFECT_API_URL`` starts for itself.

Measured, ``--runs`` times each (after one warm-up run for the in-process case):

- ``bare``: ``subprocess.run([python, "-c", "pass"])``, the process the job launches;
- ``in-process``: ``polyaxon_prefect.run(file)`` in this process (the server is already up);
- ``cli (temporary server)``: ``polyaxon-prefect run -f file --json`` as a fresh process with
  ``POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT=0`` (a temporary server per run: its cold start
  included);
- with ``--server``: the same two against a ``prefect server start`` on loopback (its own
  temporary ``PREFECT_HOME``);
- the default path (always; ``--no-local-server`` skips it), with no set-up command: a new
  ``PREFECT_HOME`` and no ``PREFECT_API_URL``; the first ``polyaxon-prefect run`` starts the
  shared local server, and runs 2..N+1 (fresh processes, finding it) are timed against a
  hand-written Prefect flow (one task running the same no-op process) pointed at the same
  server, alternately. Also timed: each CLI run's first line on stderr (what runs, on which
  server). Targets: the CLI at most 1.2x the hand-written flow, the first line within 1 s, and
  no traceback in the server's log once it is stopped.

Usage::

    python benchmarks/job_overhead.py [--runs 5] [--server] [--only-local-server]

It prints, per case, the median and minimum wall time, the ratio of the medians to the bare
process and the milliseconds of overhead per run. Run directories go to a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

NOOP = """\
version: 1.1
kind: component
name: noop
description: does nothing, so that only the overhead around it is measured
run:
  kind: job
  container:
    command: [python, -c, pass]
"""


def _time(fn: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def _cli_command() -> list[str]:
    """``polyaxon-prefect run`` when the console script has it, else the same command module."""
    script = shutil.which("polyaxon-prefect") or str(
        Path(sys.executable).with_name("polyaxon-prefect")
    )
    if Path(script).exists():
        probe = subprocess.run(
            [script, "run", "--help"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return [script, "run"]
    return [sys.executable, "-m", "polyaxon_prefect.prefect.cli._cli", "run"]


def _run_cli(command: list[str], file: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [*command, "-f", str(file), "--json"], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the CLI failed (exit {done.returncode}):\n{done.stderr[-2000:]}")


def _run_in_process(file: Path) -> None:
    import polyaxon_prefect.prefect as pp

    result = pp.run(file)
    if not result.succeeded:
        raise SystemExit(f"the in-process run failed: {result.message}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _prefect_server(work: Path) -> Iterator[str]:
    """``prefect server start`` on loopback with a fresh home; yields its API URL."""
    port = _free_port()
    env = {**os.environ, "PREFECT_HOME": str(work / "server-home")}
    env.pop("PREFECT_API_URL", None)
    prefect = str(Path(sys.executable).with_name("prefect"))
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"prefect server did not start; see {work / 'server.log'}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


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


def _cli_timed(cli: list[str], file: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """One ``polyaxon-prefect run`` as a fresh process: seconds to its first line on stderr,
    seconds to its end, and everything it printed on stderr."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [*cli, "-f", str(file), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    first_line = time.perf_counter() - started
    _out, rest = process.communicate()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"the CLI failed (exit {process.returncode}):\n{(first + rest)[-2000:]}")
    return first_line, wall, first + rest


def _server_command(cli: list[str]) -> list[str]:
    if cli[-1] == "run" and len(cli) == 2:
        return [cli[0], "server"]
    return [sys.executable, "-m", "polyaxon_prefect.cli", "server"]


def _shared_server_case(work: Path, cli: list[str], file: Path, runs: int) -> dict[str, Any]:
    """The default path, with no set-up command: a new Prefect home and no ``PREFECT_API_URL``.
    The first ``polyaxon-prefect run`` starts the shared local server; runs 2..N+1 use it and are
    timed against a hand-written Prefect flow (one task running the same no-op process) pointed
    at the same server, alternately, both as fresh processes."""
    port = _free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(work / "shared-home"),
        "POLYAXON_PREFECT_SERVER_PORT": str(port),
        "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "600",
    }
    env.pop("PREFECT_API_URL", None)
    script = work / "handwritten.py"
    script.write_text(HANDWRITTEN, encoding="utf-8")
    pointed = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}

    def handwritten() -> None:
        subprocess.run([sys.executable, str(script)], env=pointed, check=True, capture_output=True)

    try:
        first_line, first_wall, said = _cli_timed(cli, file, env)
        if "starting the local Prefect server" not in said:
            raise SystemExit(f"the first run did not start the shared server:\n{said[-2000:]}")
        handwritten()  # its imports' first use, as the CLI's first run had
        lines, cli_walls, hand_walls = [], [], []
        for _ in range(runs):
            line, wall, said = _cli_timed(cli, file, env)
            if "using the local Prefect server" not in said:
                raise SystemExit(f"a later run did not use the shared server:\n{said[-2000:]}")
            lines.append(line)
            cli_walls.append(wall)
            hand_walls.append(_time(handwritten, 1)[0])
    finally:
        subprocess.run([*_server_command(cli), "stop"], env=env, capture_output=True)
    log = (work / "shared-home" / "polyaxon-prefect-server.log").read_text(errors="replace")
    return {
        "first run (starts the server)": [first_wall],
        "first line, first run": [first_line],
        "cli, shared server": cli_walls,
        "first line, later runs": lines,
        "hand-written flow, same": hand_walls,
        "server log tracebacks": log.count("Traceback"),
    }


def _report(name: str, times: list[float], bare: float) -> None:
    median = statistics.median(times)
    print(
        f"{name:<28} median {median * 1000:8.0f} ms   min {min(times) * 1000:8.0f} ms   "
        f"x{median / bare:7.1f}   overhead {(median - bare) * 1000:8.0f} ms/run"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (default 5)")
    parser.add_argument(
        "--server", action="store_true", help="also measure against `prefect server start`"
    )
    parser.add_argument(
        "--no-local-server",
        dest="local_server",
        action="store_false",
        help="skip the `polyaxon-prefect server start` case",
    )
    parser.add_argument(
        "--only-local-server",
        action="store_true",
        help="measure only the bare process and the `polyaxon-prefect server start` case",
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-bench-"))
    os.environ["POLYAXON_PREFECT_ARTIFACTS_ROOT"] = str(work / "artifacts")
    file = work / "noop.yaml"
    file.write_text(NOOP, encoding="utf-8")
    env = dict(os.environ)
    cli = _cli_command()
    results: dict[str, list[float]] = {}
    tracebacks = 0
    try:
        results["bare process"] = _time(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.runs
        )
        if args.local_server or args.only_local_server:
            shared = _shared_server_case(work, cli, file, args.runs)
            tracebacks = int(shared.pop("server log tracebacks"))
            results.update(shared)
        if not args.only_local_server:
            _run_in_process(file)  # warm-up: imports, and the ephemeral server unless one is set
            results["in-process run()"] = _time(lambda: _run_in_process(file), args.runs)
            temporary = {**env, "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "0"}
            results["cli (temporary server)"] = _time(
                lambda: _run_cli(cli, file, temporary), args.runs
            )
        if args.server:
            with _prefect_server(work) as url:
                from prefect.settings import PREFECT_API_URL, temporary_settings

                with temporary_settings(updates={PREFECT_API_URL: url}):
                    _run_in_process(file)
                    results["in-process run(), server"] = _time(
                        lambda: _run_in_process(file), args.runs
                    )
                server_env = {**env, "PREFECT_API_URL": url}
                results["cli, server"] = _time(lambda: _run_cli(cli, file, server_env), args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    bare = statistics.median(results["bare process"])
    print(f"\nno-op job, {args.runs} runs per case, python {sys.version.split()[0]}")
    print(f"cli: {' '.join(Path(c).name for c in cli)}")
    for name, times in results.items():
        _report(name, times, bare)
    if "cli, shared server" in results:
        cli_wall = statistics.median(results["cli, shared server"])
        ratio = cli_wall / statistics.median(results["hand-written flow, same"])
        first_line = max(results["first line, later runs"] + results["first line, first run"])
        print(
            f"\nthe default path, no set-up (the first run started the shared server in "
            f"{results['first run (starts the server)'][0]:.1f} s): later runs {cli_wall:.2f} s "
            f"wall, {ratio:.2f}x the hand-written flow on the same server (target <= 1.2x: "
            f"{'met' if ratio <= 1.2 else 'MISSED'}); first line after at most "
            f"{first_line:.2f} s (target < 1 s: {'met' if first_line < 1 else 'MISSED'}); "
            f"tracebacks in the server's log after its stop: {tracebacks} (target 0: "
            f"{'met' if tracebacks == 0 else 'MISSED'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
