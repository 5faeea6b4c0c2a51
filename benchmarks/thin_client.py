"""Wall time of ``polyaxon-prefect ls --limit 5``, ``ls -q QUERY -s SPEC --limit 5``, ``get
RUN``, ``logs RUN`` and ``stop RUN`` against Prefect's own ``prefect flow-run ls --limit 5``
(for both ``ls``), ``inspect ID``, ``logs ID`` and ``cancel ID``, on a running server.

Both CLIs run as fresh processes, the way a user types them, interleaved (ours first on even
rounds, theirs first on odd ones) so that a noisy machine slows both alike, after one untimed
warm-up each. Against ``PREFECT_API_URL`` when it is set; otherwise a background server is
started in a temporary Prefect home (``polyaxon-prefect server start``), ``--count`` finished
jobs are recorded on it (`polyaxon_prefect.testing.recorded_runs`), and it is stopped at the
end. Ours is timed as users run it (no ``PREFECT_API_URL``: found through the home's record)
and with ``PREFECT_API_URL`` set, as Prefect's is. ``logs`` reads one run of ``--lines`` log
lines; each ``stop`` and ``cancel`` gets a running flow run of its own (no process holds it, as
with a job started on another machine), both set Cancelling through the same server.

The ``ls -q`` query reads every run's metrics (its reports) and sorts them all. What the query
layer adds to a thin process's imports is timed too: ``import polyaxon_prefect.cli,
polyaxon_prefect.client`` (what every thin verb loads) with and without
``polyaxon_prefect.runs_query`` (the query parser, the reader, the printer), as fresh processes.

Before timing, the script asserts the promise that makes ours fast: a plain ``ls``, an ``ls -q
... -s ...`` and ``logs`` import no ``prefect``, ``optuna``, ``httpx`` or ``pydantic``. The
report gives the load average, medians and minimums, and the ratios ours/theirs of the medians
against the target (<= 0.3x).

Usage::

    python benchmarks/thin_client.py [--runs 9] [--count 20] [--lines 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TARGET = 0.3
QUERY = ("-q", "status:failed|succeeded, metrics.loss:<=0.5", "-s", "-metrics.loss, name")
"""The ``ls -q ... -s ...`` timed: a metric condition and sort (every run's reports read)."""
_IMPORTS = "import polyaxon_prefect.cli, polyaxon_prefect.client"
"""What a thin verb's process imports before it answers (the query layer's come on top)."""
BIN = Path(sys.executable).parent
_NO_HEAVY = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "main(sys.argv[1:])\n"
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


@contextlib.contextmanager
def _prefect_client(api: str) -> Iterator[Any]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as c:
        yield c


def _running_runs(api: str, count: int, lines: int = 0) -> list[str]:
    """``count`` flow runs in Running that no process holds, each with ``lines`` log lines."""
    from datetime import UTC, datetime

    from prefect.client.schemas.actions import FlowRunCreate, LogCreate
    from prefect.states import Running, to_state_create

    made = []
    with _prefect_client(api) as client:
        flow_id = client.create_flow_from_name("thin-client-bench")
        for n in range(count):
            body = FlowRunCreate(
                flow_id=flow_id, name=f"bench-{n}", state=to_state_create(Running())
            )
            answer = client.request(
                "POST", "/flow_runs/", json=body.model_dump(mode="json", exclude_unset=True)
            )
            run_id = answer.json()["id"]
            if lines:
                client.create_logs(
                    [
                        LogCreate(
                            name="prefect.flow_runs",
                            level=20,
                            message=f"line {i} of a benchmark run",
                            timestamp=datetime.now(UTC),
                            flow_run_id=run_id,
                        )
                        for i in range(lines)
                    ]
                )
            made.append(run_id)
    return made


def _measure(api: str, own_env: dict[str, str], runs: int, lines: int) -> dict[str, list[float]]:
    env = {**own_env, "PREFECT_API_URL": api}
    listed = subprocess.run(
        _ours("ls", "--limit", "1", "--json"), env=env, check=True, capture_output=True
    )
    run_id = json.loads(listed.stdout)[0]["id"]
    logged = _running_runs(api, 1, lines)[0]
    for argv in (["ls", "--limit", "1"], ["ls", *QUERY], ["logs", logged]):
        checked = subprocess.run(
            [sys.executable, "-c", _NO_HEAVY, *argv], env=own_env, capture_output=True, text=True
        )
        if checked.returncode != 0:
            sys.exit(f"the thin `{argv[:2]}` imported what it must not: {checked.stderr.strip()}")
        print(f"thin `{' '.join(argv[:2])}`: no prefect, optuna, httpx or pydantic imported")
    to_stop = iter(_running_runs(api, 2 * (runs + 1)))

    def same(command: list[str]) -> Callable[[], list[str]]:
        return lambda: command  # a case whose command never changes

    cases: dict[str, tuple[Callable[[], list[str]], dict[str, str]]] = {
        "ours ls --limit 5": (same(_ours("ls", "--limit", "5")), own_env),
        "ours ls --limit 5 (API URL)": (same(_ours("ls", "--limit", "5")), env),
        "prefect flow-run ls --limit 5": (same(_theirs("flow-run", "ls", "--limit", "5")), env),
        "ours ls -q ... -s ... --limit 5": (same(_ours("ls", *QUERY, "--limit", "5")), own_env),
        "import cli, client": (same([sys.executable, "-c", _IMPORTS]), own_env),
        "import cli, client, runs_query": (
            same([sys.executable, "-c", f"{_IMPORTS}, polyaxon_prefect.runs_query"]),
            own_env,
        ),
        "ours get RUN": (same(_ours("get", run_id)), own_env),
        "prefect flow-run inspect ID": (same(_theirs("flow-run", "inspect", run_id)), env),
        "ours logs RUN": (same(_ours("logs", logged)), own_env),
        "prefect flow-run logs ID": (same(_theirs("flow-run", "logs", logged)), env),
        "ours stop RUN": (lambda: _ours("stop", next(to_stop)), own_env),
        "prefect flow-run cancel ID": (lambda: _theirs("flow-run", "cancel", next(to_stop)), env),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for command, case_env in cases.values():
        _timed(command(), case_env)  # warm-up: bytecode, page cache
    for round_ in range(runs):
        order = list(cases.items())
        if round_ % 2:
            order.reverse()
        for name, (command, case_env) in order:
            times[name].append(_timed(command(), case_env))
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
    parser.add_argument("--lines", type=int, default=100, help="log lines of the run `logs` reads")
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
            times = _measure(api, own_env, args.runs, args.lines)
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
        ("ls -q ... -s ...", "ours ls -q ... -s ... --limit 5", "prefect flow-run ls --limit 5"),
        ("get", "ours get RUN", "prefect flow-run inspect ID"),
        ("logs", "ours logs RUN", "prefect flow-run logs ID"),
        ("stop", "ours stop RUN", "prefect flow-run cancel ID"),
    )
    for label, ours, theirs in pairs:
        ratio = median[ours] / median[theirs]
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"{label}: {ratio:.2f}x Prefect's own (target <= {TARGET}x: {verdict})")
    with_query, without = times["import cli, client, runs_query"], times["import cli, client"]
    added = statistics.median(with_query) - statistics.median(without)
    least = min(with_query) - min(without)  # the medians carry the machine's noise
    print(
        f"the query layer's imports (query, runs_query): {added * 1000:+.0f} ms (medians), "
        f"{least * 1000:+.0f} ms (minima)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
