"""Spawn-to-healthy time of the background server (``polyaxon-prefect server start``'s
`start_server`) against Prefect's own ``prefect server start``, on the same kind of home.

Three starts are timed, interleaved round by round (so a noisy machine slows them alike), each
on a home whose migrated database has been served once before (one untimed start per home
first, as a user's second command finds it):

- ``ours``: `start_server` on a home it served before, its warm runner on (as users get it);
  the time ends when its API answers, as `start_server` returns.
- ``ours (seeded copy)``: `start_server` on a new home holding a copy of that database and of
  what sits beside it (as the test fixtures seed homes from their template).
- ``prefect``: ``prefect server start`` (API and UI, its services) on a home it served before
  (its memo of the block registration in place); the time ends when ``/api/health`` answers.

For each: the median and minimum wall time, and the server process tree's CPU seconds when it
answered (user + system, from ``/proc``); ratios ours/prefect of the medians. The load
average is printed: on a shared machine compare the CPU more than the wall.

Usage::

    python benchmarks/server_start.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

BIN = Path(sys.executable).parent
_TICKS = os.sysconf("SC_CLK_TCK")
_SCRUB = (
    "PREFECT_API_URL",
    "PREFECT_PROFILE",
    "PREFECT_PROFILES_PATH",
    "PREFECT_API_DATABASE_CONNECTION_URL",
    "PREFECT_SERVER_DATABASE_CONNECTION_URL",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    for name in _SCRUB:
        env.pop(name, None)
    env["POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT"] = "0"
    return env


def _tree_cpu(root: int) -> float:
    """User + system CPU seconds of ``root`` and its live descendants."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _stop_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def _home_env(home: Path) -> Iterator[None]:
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(_env(home))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def start_ours(home: Path) -> tuple[float, float]:
    """`start_server` on ``home``: (wall seconds to healthy, the server tree's CPU then)."""
    from polyaxon_prefect.prefect.server._background_server import start_server, stop_server

    with _home_env(home):
        began = time.monotonic()
        server, _ = start_server(port=_free_port(), idle_timeout=0, timeout=600)
        wall = time.monotonic() - began
        cpu = _tree_cpu(server.pid)
        stop_server()
    return wall, cpu


def start_prefect(home: Path) -> tuple[float, float]:
    """``prefect server start`` on ``home``: (wall seconds to healthy, its tree's CPU then)."""
    port = _free_port()
    env = _env(home)
    env["PREFECT_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    began = time.monotonic()
    process = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while not _answers(f"http://127.0.0.1:{port}/api/health"):
            if process.poll() is not None:
                raise SystemExit(f"prefect server start exited ({process.returncode})")
            time.sleep(0.2)
        wall = time.monotonic() - began
        cpu = _tree_cpu(process.pid)
    finally:
        _stop_group(process.pid)
        process.wait()
    return wall, cpu


def _migrated(folder: Path) -> Path:
    """A home whose database Prefect has migrated (``prefect server database upgrade``)."""
    home = folder / "migrated"
    subprocess.run(
        [str(BIN / "prefect"), "server", "database", "upgrade", "-y"],
        env=_env(home),
        check=True,
        capture_output=True,
    )
    return home


def _copy_home(source: Path, target: Path) -> Path:
    """``target``: a new home with ``source``'s database and the files beside it (not
    Prefect's memo, whose key holds the old path, nor the server's own files)."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.is_file() and not path.name.startswith(("polyaxon-prefect-server", "memo_store")):
            shutil.copy2(path, target / path.name)
    return target


def _report(name: str, rows: list[tuple[float, float]], base: list[tuple[float, float]]) -> str:
    wall = statistics.median(row[0] for row in rows)
    cpu = statistics.median(row[1] for row in rows)
    base_wall = statistics.median(row[0] for row in base)
    base_cpu = statistics.median(row[1] for row in base)
    return (
        f"{name:<20} wall median {wall:6.2f} s (min {min(r[0] for r in rows):6.2f}), "
        f"CPU median {cpu:6.2f} s; vs prefect: wall {wall / base_wall:.2f}x, "
        f"CPU {cpu / base_cpu:.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="server-start-bench-"))
    try:
        migrated = _migrated(folder)
        ours_home = _copy_home(migrated, folder / "ours")
        prefect_home = _copy_home(migrated, folder / "prefect")
        print("untimed first starts (each home served once)...", flush=True)
        start_ours(ours_home)
        start_prefect(prefect_home)
        starts: dict[str, Callable[[int], tuple[float, float]]] = {
            "ours": lambda _round: start_ours(ours_home),
            "ours (seeded copy)": lambda n: start_ours(_copy_home(ours_home, folder / f"c{n}")),
            "prefect": lambda _round: start_prefect(prefect_home),
        }
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in starts}
        for n in range(args.rounds):
            order = list(starts) if n % 2 == 0 else list(reversed(starts))
            for name in order:
                rows[name].append(starts[name](n))
                wall, cpu = rows[name][-1]
                print(f"round {n + 1} {name:<20} {wall:6.2f} s wall, {cpu:6.2f} s CPU", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for name in starts:
            print(_report(name, rows[name], rows["prefect"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
