"""Wall time of ``polyaxon-prefect ls --limit 5`` and ``get RUN`` against Prefect's own
``prefect flow-run ls --limit 5`` and ``prefect flow-run inspect ID``, on a running server.

Both CLIs run as fresh processes, the way a user types them, interleaved (ours first on even
rounds, theirs first on odd ones) so that a noisy machine slows both alike, after one untimed
warm-up each. Against ``PREFECT_API_URL`` when it is set; otherwise a background server is
started in a temporary Prefect home (``polyaxon-prefect server start``), ``--count`` finished
jobs are recorded on it (`polyaxon_prefect.testing.recorded_runs`), and it is stopped at the
end. Ours is timed as users run it (no ``PREFECT_API_URL``: found through the home's record)
and with ``PREFECT_API_URL`` set, as Prefect's is.

Before timing, the script asserts the promise that makes ours fast: a plain ``ls`` imports no
``prefect``, ``optuna``, ``httpx`` or ``pydantic``. The report gives the load average, medians
and minimums, and the ratios ours/theirs of the medians against the target (<= 0.3x).

Usage::

    python benchmarks/thin_client.py [--runs 9] [--count 20]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.3
BIN = Path(sys.executable).parent
_NO_HEAVY = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "main(['ls', '--limit', '1'])\n"
    "heavy = {m.split('.')[0] for m in sys.modules} & {'prefect', 'optuna', 'httpx', 'pydantic'}\n"
    "sys.exit(f'imported {sorted(heavy)}' if heavy else 0)\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def _ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "polyaxon_prefect.cli", *args]


def _theirs(*args: str) -> list[str]:
    return [str(BIN / "prefect"), *args]


def _measure(api: str, own_env: dict[str, str], runs: int) -> dict[str, list[float]]:
    env = {**own_env, "PREFECT_API_URL": api}
    listed = subprocess.run(
        _ours("ls", "--limit", "1", "--json"), env=env, check=True, capture_output=True
    )
    run_id = json.loads(listed.stdout)[0]["id"]
    checked = subprocess.run(
        [sys.executable, "-c", _NO_HEAVY], env=own_env, capture_output=True, text=True
    )
    if checked.returncode != 0:
        sys.exit(f"the thin `ls` imported what it must not: {checked.stderr.strip()}")
    print("thin `ls`: no prefect, optuna, httpx or pydantic imported")
    cases = {
        "ours ls --limit 5": (_ours("ls", "--limit", "5"), own_env),
        "ours ls --limit 5 (API URL)": (_ours("ls", "--limit", "5"), env),
        "prefect flow-run ls --limit 5": (_theirs("flow-run", "ls", "--limit", "5"), env),
        "ours get RUN": (_ours("get", run_id), own_env),
        "prefect flow-run inspect ID": (_theirs("flow-run", "inspect", run_id), env),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for command, case_env in cases.values():
        _timed(command, case_env)  # warm-up: bytecode, page cache
    for round_ in range(runs):
        order = list(cases.items())
        if round_ % 2:
            order.reverse()
        for name, (command, case_env) in order:
            times[name].append(_timed(command, case_env))
    return times


def _start_server(home: Path) -> tuple[str, dict[str, str]]:
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(home / "artifacts"),
        "POLYAXON_PREFECT_SERVER_PORT": str(_free_port()),
    }
    env.pop("PREFECT_API_URL", None)
    subprocess.run(_ours("server", "start"), env=env, check=True, capture_output=True)
    record = json.loads((home / "polyaxon-prefect-server.json").read_text(encoding="utf-8"))
    return f"{record['url']}/api", env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--count", type=int, default=20, help="runs recorded on a new server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="thin-client-bench-") as folder:
        given = os.environ.get("PREFECT_API_URL")
        if given:
            api, own_env = given, dict(os.environ)
        else:
            api, own_env = _start_server(Path(folder))
        try:
            if not given:
                from polyaxon_prefect.testing.recorded_runs import record_runs, sample_runs

                os.environ["PREFECT_API_URL"] = api
                record_runs(api, sample_runs(args.count))
            times = _measure(api, own_env, args.runs)
        finally:
            if not given:
                subprocess.run(_ours("server", "stop"), env=own_env, capture_output=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print(f"{'command':40} {'median s':>9} {'min s':>7}")
    for name, values in times.items():
        print(f"{name:40} {statistics.median(values):9.3f} {min(values):7.3f}")
    median = {name: statistics.median(values) for name, values in times.items()}
    pairs = (
        ("ls", "ours ls --limit 5", "prefect flow-run ls --limit 5"),
        (
            "ls (PREFECT_API_URL)",
            "ours ls --limit 5 (API URL)",
            "prefect flow-run ls --limit 5",
        ),
        ("get", "ours get RUN", "prefect flow-run inspect ID"),
    )
    for label, ours, theirs in pairs:
        ratio = median[ours] / median[theirs]
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"{label}: {ratio:.2f}x Prefect's own (target <= {TARGET}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
