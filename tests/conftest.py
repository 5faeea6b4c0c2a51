"""Shared pytest configuration."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

# A command with no PREFECT_API_URL starts the shared background server on port 4200 and leaves
# it running (docs/guide/server.md). Tests get a temporary server per command instead, so no
# test leaves a server behind or meets another test's; the tests of the background server set
# their own port and idle timeout.
os.environ.setdefault("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", "0")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
EXAMPLES = ROOT / "examples"


FAST_LOOP_EXCLUDES = ("process", "server", "cluster", "browser", "slow", "container")
"""The markers `make test-fast` deselects (registered, with their meaning, in pyproject.toml)."""

TIMING_TESTS = (
    "tests/integration/test_full_disk.py::test_a_prefect_home_on_a_full_disk_fails_in_seconds",
    "tests/integration/test_full_disk.py::test_a_full_artifacts_disk_says_once_where_job_log_was",
    "tests/integration/test_full_disk.py::test_a_sweep_whose_journal_fills_the_disk_ends_failed",
    # an idle timeout of 8 s: a busy neighbour between two commands would let the server go
    # (`server start --set-profile`'s test is not here: the server it starts never idles out)
    "tests/integration/test_one_server.py::test_the_first_command_starts_the_server_the_next",
    "tests/integration/test_server_faults.py::test_a_server_killed_under_a_job_is_one_line",
    "tests/process/search/test_study_storage.py::test_two_processes_share_a_grid",  # within 60 s
    *(f"tests/process/loading/test_hostile_loading.py::test_{n}_" for n in (*range(10, 18), 19)),
    "tests/process/loading/test_refs.py::test_url_ref_timeout",
    "tests/process/loading/test_url_file.py::test_http_errors_and_limits_are_urlrefs",
    "tests/process/loading/test_render_deadline.py",
    "tests/process/runtime/test_job.py::test_timeout_kills_the_process",
    "tests/process/runtime/test_replicas.py::test_cancelling_stops_every_replica",
    # the job down within 2 s of a worker's failure
    "tests/prefect/test_replicas.py::test_a_failing_worker_brings_the_job_down_at_once",
    "tests/unit/loading/test_hostile_loading.py::test_5_costly_templates_fail_fast",
    "tests/unit/search/test_huge_grids.py::test_a_ten_million_point_grid_is_counted",
    "tests/unit/search/test_huge_grids.py::test_a_million_point_sweep_opens_at_once",
    "tests/prefect/test_sweep_journal.py::test_a_sweep_never_opens_a_neighbours_huge_journal",
    "tests/prefect/test_ls_query.py::test_query_filters_and_sorts_200_runs_in_under_2_s",
    "tests/prefect/test_lifecycle.py::test_a_signal_stops_a_dag_fast",
    "tests/prefect/test_lifecycle.py::test_sigkill_",  # no process left 10 s after a kill -9
    "tests/prefect/test_stop.py::test_stop_from_a_second_process_ends_a_dag_with_a_sweep",
    "tests/prefect/test_job_flow.py::test_timeout_kills_the_process_at_the_deadline",
    "tests/prefect/test_replay.py::test_a_cache_hit_after_its_ttl_runs_again",  # a 1 s ttl
    "tests/prefect/test_mlflow_mirror.py::test_a_server_that_does_not_answer",  # not minutes
    "tests/test_fuzz.py::test_hostile_mutations_never_escape_and_stay_fast",
)
"""Node id prefixes of the tests that assert a wall-clock budget: marked `timing`, which
`make test` runs alone after the parallel pass, so a busy neighbour never eats their budget.
Name the tests, not their file, unless every test of the file has a budget: the rest of a file
runs in the parallel pass."""

TIMING_LANES = (
    ("tests/integration/", "own-servers"),
    ("tests/prefect/", "test-server"),
)
"""The timing pass runs on two workers (`-n 2 --dist loadgroup`), each lane's tests one after
the other on one worker: the tests that start Prefect servers of their own, and those on the
folder's test server (one per worker: its lane starts it once). Their time is mostly waiting
(server starts, idle timeouts, jobs that sleep until stopped), so two lanes share two cores;
the other timing tests (a `check` subprocess, a render, an HTTP timeout) go to whichever worker
is free."""


def timing_lane(nodeid: str) -> str:
    """``nodeid``'s lane in the timing pass: one of `TIMING_LANES`, else the test alone."""
    return next((lane for prefix, lane in TIMING_LANES if nodeid.startswith(prefix)), nodeid)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: none without it (`-p no:xdist`)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` hands out `TIMING_LANES` (pytest-xdist's `xdist_group` marks no longer
    reach its scheduler under pytest 9, whose node ids it can no longer rename); `--dist
    loadfile` queues a quick file, not the next long one, behind a long file (`HeavyFilesAlone`)."""
    from xdist.scheduler import LoadFileScheduling, LoadScopeScheduling

    class HeavyFilesAlone(LoadFileScheduling):
        """A worker cannot start its last pending test before it holds the next one (pytest runs
        a test knowing the next, to tear down its fixtures), so pytest-xdist queues a second
        file on a worker once it has 2 tests or fewer left. Behind one of the `HEAVY_FILES`, the
        next file in line (another long one) would wait minutes there while other workers idle:
        that worker gets the last file in line (quick unit tests) instead."""

        def _assign_work_unit(self, node: Any) -> None:
            if self.workqueue and any(
                scope in HEAVY_FILES and not all(unit.values())
                for scope, unit in self.assigned_work.get(node, {}).items()
            ):
                self.workqueue.move_to_end(next(reversed(self.workqueue)), last=False)
            super()._assign_work_unit(node)

    if config.getoption("dist") == "loadfile":
        return HeavyFilesAlone(config, log)
    if config.getoption("dist") != "loadgroup":
        return None

    class TimingLanes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return timing_lane(nodeid)

    return TimingLanes(config, log)


def timing_files() -> list[str]:
    """The files that hold the `timing` tests: `make test`'s timing pass collects these alone
    (collecting the whole suite to keep its few dozen tests took seconds of its serial time)."""
    return sorted({prefix.split("::", 1)[0] for prefix in TIMING_TESTS})


FOLDER_MARKS = {"prefect": ("server", "process")}
"""Markers every test of a folder of tests/ carries: each test of tests/prefect runs on the
folder's Prefect test server, and its jobs run as child processes."""


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = ROOT / "tests"
    for item in items:
        path = Path(item.path)
        if not path.is_relative_to(tests):
            continue
        folder = path.relative_to(tests).parts[0]
        for name in FOLDER_MARKS.get(folder, ()):
            item.add_marker(name)
        if item.nodeid.startswith(TIMING_TESTS):
            item.add_marker("timing")
        if folder == "process" and not any(item.get_closest_marker(m) for m in FAST_LOOP_EXCLUDES):
            raise pytest.UsageError(
                f"{item.nodeid}: a test in tests/process/ says why it is not in tests/unit: "
                f"mark it (or its file, with `pytestmark`) with one of {FAST_LOOP_EXCLUDES}"
            )
    items[:] = heavy_files_first(items)


HEAVY_FILES = {
    "tests/prefect/test_containers.py": 180,  # podman: image builds, containers stopped
    "tests/integration/test_readme_walk.py": 165,  # one test: every journey on one home
    "tests/integration/test_server_faults.py": 150,
    "tests/integration/test_deployments_runs.py": 130,
    "tests/integration/test_deployments.py": 130,
    "tests/prefect/test_first_runs.py": 110,  # four first runs at once on busy cores
    "tests/integration/test_server_faults_pruning.py": 100,
    "tests/integration/test_postgres.py": 90,
    "tests/integration/test_work_pool.py": 85,
    "tests/integration/test_local_server.py": 80,
    "tests/integration/test_one_server_profile.py": 75,
    "tests/integration/test_full_disk_resume.py": 75,
    "tests/prefect/test_ls_query.py": 75,  # 200 runs recorded for the module
    "tests/integration/test_server_faults_sweep.py": 70,
    "tests/integration/test_one_server_ports.py": 65,
    "tests/integration/test_gpu_homes.py": 60,
    "tests/prefect/test_lifecycle.py": 60,
    "tests/integration/test_full_disk.py": 55,
    "tests/integration/test_one_server.py": 50,
    # CPU-bound fuzzing; its timing test is taken first by the timing pass's lane that ends
    # first, not left to run alone at the end of the pass
    "tests/test_fuzz.py": 50,
}
"""Seconds each of the longest files takes on one worker of `make test`'s parallel pass (its
tests one after the other, measured there, rounded): `make test`'s workers take these first,
the longest first. A file runs whole on one worker (``--dist loadfile``), so the pass cannot
end before its longest file does, nor sooner than that after the file starts: one started
in the last minutes leaves the other workers idle while it ends. A file that grows past about
two minutes is split, by the fixtures its tests share (`test_server_faults*.py`). The timing
pass keeps this order among the tests outside its `TIMING_LANES`."""

START_RANKS = (("slow",), ("server", "container", "cluster"), ("process", "browser"))
"""Which of the other files `make test`'s workers take first: those with a test marked `slow`,
then those that start servers, then processes, then the rest (thousands of quick unit tests,
which fill the workers' last minutes evenly)."""


def heavy_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items``, each file's tests together and in their order: the `HEAVY_FILES`, longest
    first, then the other files by `START_RANKS` (stable: collection order within a rank).
    pytest-xdist hands the files out in this order (`make test` passes
    --no-loadscope-reorder: its default, the files with the most tests first, would start the
    quick parametrized unit files first and leave a two-minute single-test file for the end,
    running alone while the other workers idle)."""
    order: dict[Path, tuple[int, float]] = {}
    for item in items:
        path = Path(item.path)
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        if name in HEAVY_FILES:
            order[path] = (0, -HEAVY_FILES[name])  # the longest first
            continue
        names = {mark.name for mark in item.iter_markers()}
        rank = 1 + next(
            (r for r, marks in enumerate(START_RANKS) if names.intersection(marks)),
            len(START_RANKS),
        )
        order[path] = min((rank, 0.0), order.get(path, (rank, 0.0)))
    return sorted(items, key=lambda item: order[Path(item.path)])  # sorted() is stable


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/expected/*.json from the current compiler output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


TEMPLATE_FORMAT = 2
"""How the template database is made (bump it when that changes: cached ones are then remade)."""


def template_key() -> str:
    """The cached template's key: the installed Prefect, its migrations and its collections
    (`environment_key`, what decides the schema and the block types), and how it is made."""
    import hashlib
    import json

    from polyaxon_prefect.prefect.server._prepared_database import environment_key

    key = json.dumps({"format": TEMPLATE_FORMAT, **environment_key()}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def migrated_prefect_database(folder: Path) -> Path:
    """``folder/template/prefect.db``: a Prefect SQLite database migrated to the installed
    Prefect's head, its block types registered, with the background server's record of that
    beside it (`_prepared_database`), so a server starting on a copy does neither again. Made
    once (our server started on a new home, about 25 CPU s) under a lock the test workers and
    the sessions share, so each asks for it and one makes it; kept for later sessions."""
    from polyaxon_prefect.prefect.server._prepared_database import RECORD_FILE

    database = folder / "template" / "prefect.db"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if database.exists():
            return database
        making = folder / "making"
        shutil.rmtree(making, ignore_errors=True)
        making.mkdir()
        _start_once(making)
        # One file to copy: the write-ahead log folded in (Prefect turns WAL on again at start).
        with contextlib.closing(sqlite3.connect(making / "prefect.db")) as made:
            made.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            made.execute("PRAGMA journal_mode=DELETE")
        for path in making.iterdir():  # its log, Prefect's memo (keyed by this path)...
            if path.is_dir():
                shutil.rmtree(path)
            elif path.name not in {"prefect.db", RECORD_FILE}:
                path.unlink()
        os.replace(making, database.parent)  # whole, or not there
    return database


def _start_once(home: Path) -> None:
    """Start the background server's process on the new ``home`` until it has migrated its
    database, registered the block types and recorded that, then stop it."""
    import signal
    import socket
    import time

    from polyaxon_prefect.prefect.server._prepared_database import RECORD_FILE

    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    for name in (
        "PREFECT_API_URL",
        "PREFECT_PROFILE",
        "PREFECT_PROFILES_PATH",
        "PREFECT_API_DATABASE_CONNECTION_URL",
        "PREFECT_SERVER_DATABASE_CONNECTION_URL",
    ):
        env.pop(name, None)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    module = "polyaxon_prefect.prefect.server._server_process"
    with (home / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 600
        while not (home / RECORD_FILE).is_file():
            if process.poll() is not None or time.monotonic() > deadline:
                text = (home / "server.log").read_text(errors="replace")
                raise RuntimeError(f"the template's server did not start:\n{text[-3000:]}")
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # SQLite keeps what it committed
            process.wait()


def _template_folder(config: pytest.Config) -> Path:
    """Where the migrated database is kept: pytest's cache folder (one per clone), one
    sub-folder per `template_key`, so the sessions after the first (`make test`'s two passes,
    each local run) copy it, and another Prefect makes a new one."""
    try:
        cache_dir = Path(config.getini("cache_dir"))
    except ValueError:  # run with -p no:cacheprovider: where it would be
        cache_dir = Path(".pytest_cache")
    base = cache_dir if cache_dir.is_absolute() else config.rootpath / cache_dir
    return base / "polyaxon-prefect" / f"prefect-database-{template_key()}"


_TEMPLATE_BUILD: list[threading.Thread] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start making the migrated database in the background as soon as the collected tests
    show one will need it: the tests that come first run meanwhile."""
    needed = any(
        "prefect_database_template" in getattr(item, "fixturenames", ()) for item in session.items
    )
    if not needed or session.config.option.collectonly:
        return
    build = threading.Thread(
        target=migrated_prefect_database, args=(_template_folder(session.config),), daemon=True
    )
    build.start()
    _TEMPLATE_BUILD.append(build)


@pytest.fixture(scope="session")
def prefect_database_template(pytestconfig: pytest.Config) -> Path:
    """The migrated Prefect database (made once; see `migrated_prefect_database`)."""
    for build in _TEMPLATE_BUILD:
        build.join()
    return migrated_prefect_database(_template_folder(pytestconfig))


def seed_prefect_home(home: Path, template: Path) -> Path:
    """Make ``home`` a Prefect home whose database is a copy of ``template``, with the record
    that says what it holds: a server starting on it finds its tables made and its block types
    registered instead of migrating a new database (about 5 s per home) and importing every
    collection to register them (a few seconds more). Tests about a first run keep a truly new
    home instead."""
    from polyaxon_prefect.prefect.server._prepared_database import RECORD_FILE

    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, home / "prefect.db")
    record = template.with_name(RECORD_FILE)
    if record.is_file():
        shutil.copyfile(record, home / RECORD_FILE)
    return home


@pytest.fixture
def migrated_home(tmp_path: Path, prefect_database_template: Path) -> Path:
    """``tmp_path/prefect``: a new Prefect home with an already migrated database."""
    return seed_prefect_home(tmp_path / "prefect", prefect_database_template)
