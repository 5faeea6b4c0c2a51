"""Two workers share one sweep study on PostgreSQL: no grid point runs twice, all run.

PostgreSQL is started from the machine's binaries (Debian's ``postgresql`` package: ``initdb``
and ``pg_ctl``) in a temporary directory on a free loopback port; as root, it runs as the
``postgres`` user (``initdb`` refuses root). Skipped only when no PostgreSQL binaries exist.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.search._optuna._study import SweepStudy
from tests.integration.conftest import free_port

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]


def _pg_bin() -> Path | None:
    found = [shutil.which("pg_ctl"), *sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))]
    for candidate in found:
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve().parent
    return None


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    pytest.importorskip("psycopg2", reason="the PostgreSQL driver psycopg2 is not installed")
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL binaries (initdb/pg_ctl) on this machine")
    folder = Path(tempfile.mkdtemp(prefix="pg-sweep-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log")]
    subprocess.run(_as_postgres([*start, "-w", "start"]), check=True, capture_output=True)
    try:
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=port, user="postgres")
        connection.autocommit = True
        connection.cursor().execute("CREATE DATABASE sweeps")
        connection.close()
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/sweeps"
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(_as_postgres(stop), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


MATRIX = """\
version: 1.1
kind: operation
matrix:
  kind: grid
  concurrency: 2
  params:
    x: {kind: range, value: [0, 24, 1]}
    y: {kind: choice, value: [a, b]}
component:
  name: grid
  inputs: [{name: x, type: int}, {name: y, type: str}]
  outputs: [{name: loss, type: float}]
  run: {kind: job, container: {command: ["true"]}}
"""

WORKER = textwrap.dedent(
    """\
    import json, sys, time
    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.search._optuna._study import SweepStudy

    path, url, name, create, out = sys.argv[1:6]
    matrix = load_polyaxonfile(path).operation.matrix
    study = SweepStudy.open(matrix, study_name=name, storage=url, resume=create != "create")
    ran = []
    while not study.is_finished():
        suggestion = study.ask()
        if suggestion is None:
            time.sleep(0.05)
            continue
        ran.append(suggestion.index)
        time.sleep(0.01)  # the trial
        study.tell(suggestion.number, status="succeeded", outputs={"loss": 1.0})
    open(out, "w").write(json.dumps(ran))
    """
)


def test_two_workers_share_a_grid_without_running_a_point_twice(postgres_url: str, tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text(MATRIX, encoding="utf-8")
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    name = "grid-two-workers"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}

    def worker(mode: str, out: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, str(script), str(path), postgres_url, name, mode, out]
        return subprocess.Popen(argv, env=env)

    first = worker("create", str(tmp_path / "a.json"))
    deadline = time.monotonic() + 60
    while SweepStudy.latest(postgres_url, name) is None:  # the first worker created it
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.1)
    second = worker("join", str(tmp_path / "b.json"))
    assert first.wait(timeout=120) == 0 and second.wait(timeout=120) == 0

    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert a and b, "both workers ran trials"
    assert not set(a) & set(b)
    assert sorted(a + b) == list(range(48))
    matrix = load_polyaxonfile(path).operation.matrix
    study = SweepStudy.open(matrix, study_name=name, storage=postgres_url, resume=True)
    assert study.is_finished()
    assert [r.status for r in study.history()] == ["succeeded"] * 48


SWEEP = """\
version: 1.1
kind: operation
matrix:
  kind: random
  numRuns: 2
  params:
    x: {kind: uniform, value: "0:1"}
component:
  name: tiny-sweep
  inputs: [{name: x, type: float}]
  run: {kind: job, container: {command: [python, -c, pass, "{{ x }}"]}}
"""


@pytest.mark.fault
def test_a_dead_postgresql_is_one_line_for_the_server_and_for_a_sweeps_storage(
    tmp_path: Path, migrated_home: Path
) -> None:
    """Nothing listens on the port: ``server start --database-url`` and a sweep's
    ``--storage`` each end with one line naming the URL (password hidden) and the refused
    connection, exit 1, no SQLAlchemy traceback, nothing left running."""
    pytest.importorskip("psycopg2", reason="the PostgreSQL driver psycopg2 is not installed")
    from tests.integration.conftest import new_home_env, no_process_left

    dead = free_port()
    home = migrated_home  # not a first start: the sweep's temporary server need not migrate
    env = new_home_env(home, tmp_path / "artifacts", "0")  # the sweep: a temporary server
    bin_dir = Path(sys.executable).parent

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "polyaxon-prefect"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    database = f"postgresql+asyncpg://postgres:secret@127.0.0.1:{dead}/prefect"
    started = cli("server", "start", "--port", str(free_port()), "--database-url", database)
    assert started.returncode == 1, started.stderr
    [line] = started.stderr.splitlines()
    assert line.startswith(
        "error: the Prefect server did not start: its database at "
        f"postgresql+asyncpg://postgres:***@127.0.0.1:{dead}/prefect cannot be used: the "
        "connection was refused ("
    ), line
    assert "secret" not in started.stderr

    spec = tmp_path / "sweep.yaml"
    spec.write_text(SWEEP)
    storage = f"postgresql+psycopg2://postgres:secret@127.0.0.1:{dead}/sweeps"
    swept = cli("run", "-f", str(spec), "--storage", storage)
    assert swept.returncode == 1, swept.stderr[-3000:]
    [message] = [line for line in swept.stdout.splitlines() if line.startswith("message:")]
    assert message.startswith("message: the sweep's storage postgresql+psycopg2://"), message
    assert f"***@127.0.0.1:{dead}/sweeps cannot be reached: connection to server at " in message
    assert "Connection refused" in message
    output = swept.stdout + swept.stderr
    assert "Traceback" not in output and "sqlalche.me" not in output and "secret" not in output
    no_process_left(home)
