"""The leaderboard and the best trial's Markdown are for people: floats at 6 significant digits,
a trial's uuid cut to its first 8 characters; `trial_dict` (``--json``, `RunResult`) keeps the
exact values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from polyaxon_prefect.search._sweep import best_markdown, display, leaderboard_rows, trial_dict

UUID = "0123456789abcdef0123456789abcdef"


@dataclass
class _Record:
    index: int
    status: str
    value: float | None
    params: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    uuid: str | None = UUID
    number: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def test_leaderboard_floats_are_rounded_and_uuids_cut() -> None:
    record = _Record(
        0,
        "succeeded",
        0.123456789012,
        {"lr": 0.1 + 0.2, "layers": [0.333333333333, 2], "opt": "sgd", "epochs": 10},
        {"accuracy": 0.987654321, "loss": 0.123456789012},
    )
    [row] = leaderboard_rows([record], "loss", maximize=False)
    assert row == {
        "rank": 1,
        "trial": 0,
        "status": "succeeded",
        "loss": 0.123457,
        "lr": 0.3,
        "layers": "[0.333333, 2]",
        "opt": "sgd",
        "epochs": 10,
        "accuracy": 0.987654,
        "uuid": "01234567",
    }
    exact = trial_dict(record)
    assert exact["value"] == 0.123456789012 and exact["uuid"] == UUID
    assert exact["params"]["lr"] == 0.1 + 0.2 and exact["outputs"]["accuracy"] == 0.987654321


def test_ranking_uses_the_exact_values_not_the_rounded_ones() -> None:
    close = [_Record(0, "succeeded", 0.1000001), _Record(1, "succeeded", 0.10000001)]
    rows = leaderboard_rows(close, "loss", maximize=False)
    assert [r["trial"] for r in rows] == [1, 0] and rows[0]["loss"] == rows[1]["loss"] == 0.1


def test_a_trial_without_uuid_and_non_finite_values_are_shown_as_they_are() -> None:
    [row] = leaderboard_rows([_Record(3, "failed", None, uuid=None)], "loss", maximize=False)
    assert row["uuid"] is None and row["loss"] is None
    assert display(float("inf")) == float("inf") and display(True) is True


def test_best_markdown_rounds_the_metric_and_params() -> None:
    best = {"index": 2, "status": "succeeded", "value": 0.0123456789, "params": {"lr": 1 / 3}}
    text = best_markdown("sweep", best, "loss")
    assert "loss = 0.0123457" in text and "| lr | 0.333333 |" in text
    assert "0.0123456789" not in text
