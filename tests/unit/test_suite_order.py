"""The parallel pass's order of files (tests/conftest.py): every file `HEAVY_FILES` names
exists, so a renamed or split file cannot silently fall back to its rank, and the timing
tests' node ids name files that exist, so none silently leaves the timing pass."""

from __future__ import annotations

from tests.conftest import HEAVY_FILES, ROOT, TIMING_TESTS


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
