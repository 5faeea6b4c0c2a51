"""Full disks fail loudly, once, within seconds: real CLI processes on a 2 MB tmpfs.

The Prefect home on a full disk: the server's own reason ("database or disk is full") is the
one error line, for the temporary server and for the shared background one (no fallback to a
temporary server that would fail alike), instead of a wait of minutes. The artifacts root on a
full disk: the run says, once, at which line ``job.log`` was cut, and the file holds exactly the
lines before it. Each test checks that no process of its Prefect home is left. A sweep cut by
a full disk and resumed once there is room is in `test_full_disk_resume.py` (over a minute), so
the parallel suite runs it on another worker.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import seed_prefect_home
from tests.integration.conftest import new_home_env, no_process_left

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]

BIN = Path(sys.executable).parent
NOOP = (
    "version: 1.1\nkind: component\nname: noop\n"
    "run: {kind: job, container: {command: [python, -c, pass]}}\n"
)
FLOOD = (
    "version: 1.1\nkind: component\nname: flood\n"
    "run: {kind: job, container: {command: [python, -c, "
    "\"for i in range(60000): print('line %06d ' % i + 'x' * 40)\"]}}\n"
)
SECONDS = 45  # the bound on a failing start (a start that fails takes ~10 s on a busy machine)


@contextlib.contextmanager
def _mounted(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder`` (root only), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip(f"mounting a {size} tmpfs needs root")
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs mounted for this test (root only), unmounted after it."""
    with _mounted(tmp_path / "small-disk", "2m") as folder:
        yield folder


def _run(env: dict[str, str], spec: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [str(BIN / "polyaxon-prefect"), "run", "-f", str(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize("idle", ["0", "600"], ids=["temporary-server", "background-server"])
def test_a_prefect_home_on_a_full_disk_fails_in_seconds_with_the_servers_reason(
    tmpfs: Path, tmp_path: Path, idle: str
) -> None:
    spec = tmp_path / "noop.yaml"
    spec.write_text(NOOP)
    home = tmpfs / "prefect"
    env = new_home_env(home, tmp_path / "artifacts", idle)

    done, seconds = _run(env, spec)

    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 1, done.stderr
    assert len(errors) == 1, done.stderr
    assert re.search(r"database or disk is full|disk holding .* is full", errors[0]), errors
    assert "Traceback" not in done.stderr and "temporary one" not in done.stderr
    assert seconds < SECONDS
    no_process_left(home)


def test_a_full_artifacts_disk_says_once_where_job_log_was_cut(
    tmpfs: Path, tmp_path: Path, migrated_home: Path
) -> None:
    spec = tmp_path / "flood.yaml"
    spec.write_text(FLOOD)
    home = migrated_home
    env = {**new_home_env(home, tmpfs, "0"), "POLYAXON_PREFECT_LOG_LINES_PER_SECOND": "50"}

    done, seconds = _run(env, spec)

    output = done.stdout + done.stderr
    cuts = re.findall(r"\[polyaxon-prefect\] job\.log was cut at line (\d+): (.*)", output)
    assert done.returncode == 0, output[-3000:]
    assert len(cuts) == 1, output[-3000:]
    line, why = int(cuts[0][0]), cuts[0][1]
    assert "is full" in why and str(tmpfs) in why
    (log,) = tmpfs.rglob("job.log")
    assert log.read_bytes().count(b"\n") == line - 1  # every line before the cut, none after
    assert "the full output is in job.log" not in output
    assert seconds < 120
    no_process_left(home)


SWEEP = """\
version: 1.1
kind: operation
matrix:
  kind: random
  concurrency: 2
  numRuns: 300
  seed: 3
  params:
    x: {kind: uniform, value: "0:1"}
component:
  name: tiny-sweep
  inputs: [{name: x, type: float}]
  run:
    kind: job
    container: {command: [python, -c, "pass", "{{ x }}"]}
"""


def test_a_sweep_whose_journal_fills_the_disk_ends_failed_in_one_line(
    tmpfs: Path, tmp_path: Path, migrated_home: Path
) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(SWEEP)
    home = migrated_home
    (tmpfs / "filler").write_bytes(b"\0" * (2 * 1024 * 1024 - 24 * 1024))  # leave ~24 KB
    env = new_home_env(home, tmpfs, "0")

    done, seconds = _run(env, spec)

    assert done.returncode == 1, done.stderr[-3000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("message:")]
    assert len(said) == 1, done.stdout
    assert said[0].startswith("message: the sweep's study cannot be written: the disk holding ")
    assert said[0].endswith(
        "is full (no space left to write it); the trials in flight were stopped; make room "
        "there, then run again with --resume"
    )
    assert "OSError" not in done.stdout and "Errno" not in done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert seconds < SECONDS
    no_process_left(home)


def test_a_prefect_database_whose_disk_fills_after_start_is_one_line_naming_it(
    tmp_path: Path, prefect_database_template: Path
) -> None:
    """The server started, then its disk filled: the next run says that, once, not a bare
    ``500 Internal Server Error``."""
    spec = tmp_path / "noop.yaml"
    spec.write_text(NOOP)
    with _mounted(tmp_path / "disk", "64m") as disk:
        # a used database (not a first start): the server starts without migrating
        home = seed_prefect_home(disk / "prefect", prefect_database_template)
        env = new_home_env(home, tmp_path / "artifacts", "600")
        try:
            port = env["POLYAXON_PREFECT_SERVER_PORT"]
            started = subprocess.run(
                [str(BIN / "polyaxon-prefect"), "server", "start", "--port", port],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert started.returncode == 0, started.stderr
            # SQLite reuses its write-ahead log's space: empty it first, so that the next
            # write must grow it on the full disk, as a long-used database's would.
            with contextlib.closing(sqlite3.connect(home / "prefect.db")) as database:
                busy, _, _ = database.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                assert busy == 0
            with contextlib.suppress(OSError), (disk / "filler").open("wb") as filler:
                while filler.write(b"\0" * 1024 * 1024):  # until the disk is full
                    pass

            done, _seconds = _run(env, spec)

            errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert done.returncode == 1, done.stderr
            assert len(errors) == 1, done.stderr
            assert errors[0].startswith(
                f"error: the Prefect server at http://127.0.0.1:{port}/api cannot write its "
                f"database: the disk holding {home} is full ("
            ), errors
            assert errors[0].endswith("bytes free); make room there, then run again"), errors
            said = done.stderr.replace(str(tmp_path), "TMP")  # pytest's folders: pytest-500...
            assert "Traceback" not in said and "500" not in said
        finally:
            subprocess.run(
                [str(BIN / "polyaxon-prefect"), "server", "stop"], env=env, capture_output=True
            )
        no_process_left(home)
