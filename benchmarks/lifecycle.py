"""How fast and how cleanly ``polyaxon-prefect run`` ends, and what a first run costs.

Real CLI processes on the embedded default (the CLI's own local Prefect server, a temporary
``PREFECT_HOME`` and artifacts root). Processes of a run are found by an environment variable
given to the CLI, which everything it starts inherits. Measured:

- ``first run``: a no-op job on a brand-new Prefect home (the database is built), and the
  same job again on that home (warm), as a ratio;
- ``Ctrl-C``: seconds from SIGINT, sent while a two-op DAG of sleeping jobs runs, to the
  CLI's exit (the issue's target: 5 s), and its exit code;
- ``SIGKILL``: seconds from ``kill -9`` of the CLI mid-job to the last process of the run
  gone, the server included (target: 10 s);
- ``heavy output``: peak RSS of the CLI while its job prints 105 MB in 1.05 M lines, against
  the peak of the same CLI running a quiet job (ratio), and the wall time of both.

Usage::

    python benchmarks/lifecycle.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

PY = sys.executable
MARK = "POLYAXON_PREFECT_BENCH_MARK"


def run_processes(mark: str) -> list[int]:
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def job_file(folder: Path, name: str, code: str) -> Path:
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": name,
        "run": {"kind": "job", "container": {"command": [PY, "-c", code]}},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def dag_file(folder: Path, flags: Path) -> Path:
    code = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(flags)!r}, os.environ['POLYAXON_PREFECT_RUN_UUID']).touch(); "
        "time.sleep(300)"
    )
    spec = {
        "version": 1.1,
        "kind": "component",
        "name": "bench-dag",
        "run": {
            "kind": "dag",
            "operations": [{"name": "a", "dagRef": "s"}, {"name": "b", "dagRef": "s"}],
            "components": [
                {"name": "s", "run": {"kind": "job", "container": {"command": [PY, "-c", code]}}}
            ],
        },
    }
    path = folder / "dag.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


class Cli:
    """One ``polyaxon-prefect run`` process with its output in files."""

    def __init__(self, path: Path, env: dict[str, str], folder: Path) -> None:
        self.mark = uuid.uuid4().hex
        self.out = folder / f"{self.mark}.out"
        self.err = folder / f"{self.mark}.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                [PY, "-m", "polyaxon_prefect.cli", "run", "-f", str(path), "--json"],
                env={**env, MARK: self.mark},
                stdout=out,
                stderr=err,
            )
        self.started = time.monotonic()
        self.peak_kb = 0

    def watch(self) -> float:
        """Wait for the exit, recording the peak RSS; the wall time."""
        while self.proc.poll() is None:
            try:
                for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.1)
        return time.monotonic() - self.started


def wait_until(predicate, timeout: float) -> float | None:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="polyaxon-prefect-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {
        "PREFECT_HOME": str(root / "home"),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(root / "artifacts"),
    }
    noop = job_file(root, "noop", "pass")

    first = Cli(noop, env, root).watch()
    warm = Cli(noop, env, root).watch()
    print(
        f"first run on a new Prefect home: {first:.1f} s; warm: {warm:.1f} s ({first / warm:.2f}x)"
    )

    flags = root / "flags"
    flags.mkdir()
    cli = Cli(dag_file(root, flags), env, root)
    wait_until(lambda: len(list(flags.iterdir())) >= 2, 120)
    sent = time.monotonic()
    cli.proc.send_signal(signal.SIGINT)
    cli.proc.wait()
    exited = time.monotonic() - sent
    gone = wait_until(lambda: not run_processes(cli.mark), 30)
    total = "more than 30" if gone is None else f"{gone + exited:.2f}"
    print(
        f"Ctrl-C mid-DAG: exit {cli.proc.returncode} after {exited:.2f} s (target 5 s); "
        f"every process gone after {total} s"
    )

    for child in flags.iterdir():
        child.unlink()
    code = (
        "import os, pathlib, subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        f"pathlib.Path({str(flags)!r}, 'x').touch(); time.sleep(300)"
    )
    cli = Cli(job_file(root, "sleeper", code), env, root)
    wait_until(lambda: any(flags.iterdir()), 120)
    count = len(run_processes(cli.mark))
    cli.proc.kill()
    cli.proc.wait()
    gone = wait_until(lambda: not run_processes(cli.mark), 30)
    print(
        f"SIGKILL mid-job: {count} processes of the run; all gone after "
        f"{'more than 30' if gone is None else f'{gone:.2f}'} s (target 10 s)"
    )

    loud_code = (
        "import sys\nline = 'x' * 99 + '\\n'\nblock = line * 10000\n"
        "for _ in range(105): sys.stdout.write(block)\n"
    )
    quiet = Cli(noop, env, root)
    quiet_wall = quiet.watch()
    loud = Cli(job_file(root, "loud", loud_code), env, root)
    loud_wall = loud.watch()
    print(
        f"heavy output (105 MB, 1.05 M lines): CLI peak RSS {loud.peak_kb / 1024:.0f} MB vs "
        f"{quiet.peak_kb / 1024:.0f} MB for a quiet job ({loud.peak_kb / quiet.peak_kb:.2f}x); "
        f"wall {loud_wall:.1f} s vs {quiet_wall:.1f} s"
    )


if __name__ == "__main__":
    main()
