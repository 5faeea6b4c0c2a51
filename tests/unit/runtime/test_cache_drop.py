"""`RunCache.drop_runs` (``invalidate``): only the records that point to the runs named go."""

from __future__ import annotations

from pathlib import Path

from polyaxon_prefect.runtime import RunCache

KEYS = {"a" * 16: "1" * 32, "b" * 16: "2" * 32, "c" * 16: "1" * 32}


def _cache(tmp_path: Path) -> RunCache:
    cache = RunCache.under(tmp_path)
    for key, uuid in KEYS.items():
        cache.store(key, uuid=uuid, outputs={}, metrics={}, artifacts_path=None)
    return cache


def test_drops_every_record_of_the_runs_and_no_other(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    (cache.root / "notes.json").write_text("{}")  # not a record's name: left alone
    (cache.root / ("d" * 16 + ".json")).write_text("{broken")  # unreadable: left alone
    dashed = "11111111-1111-1111-1111-111111111111"
    assert cache.drop_runs([dashed]) == ["a" * 16, "c" * 16]
    assert cache.lookup("a" * 16) is None and cache.lookup("c" * 16) is None
    hit = cache.lookup("b" * 16)
    assert hit is not None and hit.uuid == "2" * 32
    assert (cache.root / "notes.json").exists() and (cache.root / ("d" * 16 + ".json")).exists()
    assert cache.drop_runs([dashed]) == []


def test_nothing_to_drop_without_a_cache_or_uuids(tmp_path: Path) -> None:
    assert RunCache.under(tmp_path / "none").drop_runs(["1" * 32]) == []
    assert _cache(tmp_path).drop_runs(["", "9" * 32]) == []
