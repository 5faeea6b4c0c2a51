"""The parallel pass's order of files (tests/conftest.py): every file `HEAVY_FILES` names
exists, so a renamed or split file cannot silently fall back to its rank, and the timing
tests' node ids name files that exist, so none silently leaves the timing pass; a worker busy
with a heavy file gets a quick file queued behind it, not the next heavy one (pytest-xdist's own
scheduler, driven here as its controller drives it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.conftest import HEAVY_FILES, ROOT, TIMING_TESTS, pytest_xdist_make_scheduler


def test_every_heavy_file_exists_and_is_a_test_file() -> None:
    missing = [name for name in HEAVY_FILES if not (ROOT / name).is_file()]
    assert not missing, f"HEAVY_FILES names files that are not there: {missing}"
    assert all(name.rsplit("/", 1)[-1].startswith("test_") for name in HEAVY_FILES)


def test_the_heavy_files_are_listed_longest_first() -> None:
    seconds = list(HEAVY_FILES.values())
    assert seconds == sorted(seconds, reverse=True)


def test_every_timing_test_names_a_file_that_exists() -> None:
    missing = [t for t in TIMING_TESTS if not (ROOT / t.split("::", 1)[0]).is_file()]
    assert not missing, f"timing tests in files that are not there: {missing}"


class _Worker:
    """What pytest-xdist's scheduler calls on a worker: the tests sent to it, in order."""

    shutting_down = False

    def __init__(self) -> None:
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_worker_on_a_heavy_file_gets_the_quickest_file_queued_behind_it() -> None:
    heavy = sorted(HEAVY_FILES, key=HEAVY_FILES.__getitem__, reverse=True)[:2]
    collection = [f"{heavy[0]}::test_a", f"{heavy[1]}::test_b", "tests/unit/test_x.py::test_c"]
    config: Any = SimpleNamespace(
        getoption=lambda name: "loadfile",
        getvalue=lambda name: ["1*popen"] if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=False),
    )
    scheduler = pytest_xdist_make_scheduler(config, None)
    worker = _Worker()
    scheduler.add_node(worker)
    scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    # the heavy file, then the quick one (not the second heavy file, which waits for a worker)
    assert [collection[i] for i in worker.sent] == [collection[0], collection[2]]
    scheduler.mark_test_complete(worker, 0)
    scheduler.mark_test_complete(worker, 2)
    assert [collection[i] for i in worker.sent][-1] == collection[1]
