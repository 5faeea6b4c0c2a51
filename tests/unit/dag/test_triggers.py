"""Trigger rules, checked against tables written out by hand (not computed by the code)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from polyaxon_prefect.dag import DONE_STATUSES, FAILED_STATUSES, TRIGGERS, decide
from polyaxon_prefect.dag._trigger_rules import truth_table_markdown

ROOT = Path(__file__).resolve().parents[3]

# Order of columns/rows in the tables below: s f k u x r
STATUSES: tuple[str | None, ...] = (
    "succeeded",
    "failed",
    "skipped",
    "upstream_failed",
    "stopped",
    None,  # still running
)
WORDS = {"R": "run", "W": "wait", "U": "upstream_failed", "S": "skip"}

# One upstream, skipOnUpstreamSkip unset.
ONE = {
    "all_succeeded": "R U R U U W",
    "all_failed": "U R U R U W",
    "all_done": "R R R R R W",
    "one_succeeded": "R U R U U W",
    "one_failed": "U R U R U W",
    "one_done": "R R R R R W",
}

# Two upstreams, skipOnUpstreamSkip unset: row = upstream A, column = upstream B.
TWO = {
    "all_succeeded": """
        R U R U U W
        U U U U U W
        R U R U U W
        U U U U U W
        U U U U U W
        W W W W W W""",
    "all_failed": """
        U U U U U W
        U R U R U W
        U U U U U W
        U R U R U W
        U U U U U W
        W W W W W W""",
    "all_done": """
        R R R R R W
        R R R R R W
        R R R R R W
        R R R R R W
        R R R R R W
        W W W W W W""",
    "one_succeeded": """
        R R R R R R
        R U R U U W
        R R R R R R
        R U R U U W
        R U R U U W
        R W R W W W""",
    "one_failed": """
        U R U R U W
        R R R R R R
        U R U R U W
        R R R R R R
        U R U R U W
        W R W R W W""",
    "one_done": """
        R R R R R R
        R R R R R R
        R R R R R R
        R R R R R R
        R R R R R R
        R R R R R W""",
}


def _one_cases() -> list[tuple[str, str | None, bool, str]]:
    cases = []
    for trigger, row in ONE.items():
        for status, letter in zip(STATUSES, row.split(), strict=True):
            for flag in (False, True):
                expected = "S" if flag and status == "skipped" else letter
                cases.append((trigger, status, flag, WORDS[expected]))
    return cases


def _two_cases() -> list[tuple[str, str | None, str | None, bool, str]]:
    cases = []
    for trigger, grid in TWO.items():
        rows = [line.split() for line in grid.strip().splitlines()]
        assert len(rows) == 6 and all(len(r) == 6 for r in rows)
        for (i, a), (j, b) in itertools.product(enumerate(STATUSES), repeat=2):
            for flag in (False, True):
                skipped = "skipped" in (a, b)
                expected = "S" if flag and skipped else rows[i][j]
                cases.append((trigger, a, b, flag, WORDS[expected]))
    return cases


def test_the_tables_cover_every_trigger() -> None:
    assert set(ONE) == set(TWO) == set(TRIGGERS)
    assert len(_one_cases()) == 6 * 6 * 2
    assert len(_two_cases()) == 6 * 36 * 2


@pytest.mark.parametrize(("trigger", "status", "flag", "expected"), _one_cases())
def test_one_upstream(trigger: str, status: str | None, flag: bool, expected: str) -> None:
    assert decide(trigger, [status], skip_on_upstream_skip=flag) == expected


@pytest.mark.parametrize(("trigger", "a", "b", "flag", "expected"), _two_cases())
def test_two_upstreams(
    trigger: str, a: str | None, b: str | None, flag: bool, expected: str
) -> None:
    assert decide(trigger, [a, b], skip_on_upstream_skip=flag) == expected


@pytest.mark.parametrize("trigger", ["one_succeeded", "one_failed"])
def test_one_trigger_waits_for_a_later_match_unlike_polyaxon(trigger: str) -> None:
    # Polyaxon's scheduler decides at the first finished upstream; a non-matching first
    # upstream made the op upstream_failed even when the second one later matched.
    miss = "stopped"
    hit = "succeeded" if trigger == "one_succeeded" else "failed"
    assert decide(trigger, [miss, None, None]) == "wait"
    assert decide(trigger, [miss, miss, None]) == "wait"
    assert decide(trigger, [miss, miss, hit]) == "run"
    assert decide(trigger, [miss, miss, miss]) == "upstream_failed"


def test_one_trigger_fires_before_the_others_finish() -> None:
    assert decide("one_succeeded", ["succeeded", None, None]) == "run"
    assert decide("one_failed", [None, "upstream_failed", None]) == "run"
    assert decide("one_done", [None, None, "stopped"]) == "run"


def test_all_triggers_wait_even_when_already_doomed() -> None:
    assert decide("all_succeeded", ["failed", None]) == "wait"
    assert decide("all_failed", ["succeeded", "running"]) == "wait"


def test_skip_on_upstream_skip_skips_as_soon_as_one_upstream_is_skipped() -> None:
    assert decide("all_succeeded", ["skipped", None], skip_on_upstream_skip=True) == "skip"
    assert decide("one_failed", [None, "skipped"], skip_on_upstream_skip=True) == "skip"
    # without the flag a skipped upstream is a success
    assert decide("all_succeeded", ["skipped", "succeeded"]) == "run"
    assert decide("all_failed", ["skipped", "failed"]) == "upstream_failed"


def test_no_upstreams_always_run() -> None:
    for trigger in (*TRIGGERS, None):
        assert decide(trigger, []) == "run"
        assert decide(trigger, [], skip_on_upstream_skip=True) == "run"


def test_unset_trigger_is_all_succeeded() -> None:
    for a, b in itertools.product(STATUSES, repeat=2):
        assert decide(None, [a, b]) == decide("all_succeeded", [a, b])


@pytest.mark.parametrize("pending", ["created", "running", "queued"])
def test_not_done_words_behave_like_none(pending: str) -> None:
    for trigger, status in itertools.product(TRIGGERS, STATUSES):
        assert decide(trigger, [status, pending]) == decide(trigger, [status, None])


def test_order_of_upstreams_does_not_matter() -> None:
    for trigger, combo in itertools.product(TRIGGERS, itertools.product(STATUSES, repeat=3)):
        decisions = {decide(trigger, list(p)) for p in itertools.permutations(combo)}
        assert len(decisions) == 1, (trigger, combo, decisions)


def test_unknown_trigger_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown trigger `any_succeeded`"):
        decide("any_succeeded", ["succeeded"])


def test_status_sets() -> None:
    assert {"succeeded", "failed", "stopped", "skipped", "upstream_failed"} == DONE_STATUSES
    assert {"failed", "upstream_failed"} == FAILED_STATUSES


def test_doc_file_is_the_generated_truth_table() -> None:
    doc = (ROOT / "docs" / "dag-triggers.md").read_text(encoding="utf-8")
    assert doc == truth_table_markdown(), (
        "docs/dag-triggers.md is stale: regenerate it with "
        "`python -m polyaxon_prefect.dag._trigger_rules > docs/dag-triggers.md`"
    )
