"""Shared pytest configuration."""

from __future__ import annotations

import os
from pathlib import Path

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
    "tests/integration/test_full_disk.py",
    "tests/integration/test_one_server.py",  # idle timeouts of a few seconds
    "tests/integration/test_server_faults.py",
    "tests/process/search/test_study_storage.py",  # two processes joined within 60 s
    "tests/process/loading/test_hostile_loading.py",
    "tests/process/loading/test_refs.py::test_url_ref_timeout",
    "tests/process/loading/test_url_file.py::test_http_errors_and_limits_are_urlrefs",
    "tests/process/loading/test_render_deadline.py",
    "tests/process/runtime/test_job.py::test_timeout_kills_the_process",
    "tests/process/runtime/test_replicas.py::test_cancelling_stops_every_replica",
    "tests/unit/loading/test_hostile_loading.py::test_5_costly_templates_fail_fast",
    "tests/unit/search/test_huge_grids.py",
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
`make test` runs alone after the parallel pass, so a busy neighbour never eats their budget."""

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
