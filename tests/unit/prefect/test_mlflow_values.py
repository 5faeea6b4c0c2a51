"""What a run becomes in MLflow (`_mlflow_values`), and when the mirror is on: keys MLflow
accepts, values cut to its limits, metric points at their steps, outputs as metrics or tags;
how a running job's metrics file is read (`_mlflow_worker._tail`)."""

from __future__ import annotations

import math
import posixpath
import re
from pathlib import Path

import pytest

from polyaxon_prefect.prefect.watch._mlflow_mirror import enabled
from polyaxon_prefect.prefect.watch._mlflow_values import (
    end_tags,
    metric_key,
    metric_points,
    mlflow_status,
    output_values,
    param_values,
    start_tags,
)
from polyaxon_prefect.prefect.watch._mlflow_worker import _tail

_VALID = re.compile(r"^[/\w.\- ]*$")  # MLflow's rule where a colon is refused (Windows)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("loss", "loss"),
        ("train/loss", "train/loss"),
        ("val loss", "val loss"),
        ("acc@1", "acc_1"),
        ("f1:macro", "f1_macro"),
        ("/abs", "_abs"),
        ("a//b", "a__b"),
        ("dir/", "dir_"),
        ("..", "_."),
        ("../up", "_._up"),
        ("", "_"),
    ],
)
def test_every_metric_name_becomes_a_key_mlflow_accepts(name: str, key: str) -> None:
    assert metric_key(name) == key
    assert _VALID.match(key) and posixpath.normpath(key) == key and not key.startswith("..")


def test_a_long_key_and_long_values_are_cut_to_mlflows_limits() -> None:
    assert len(metric_key("x" * 400)) == 250
    params = param_values({"text": "a" * 7000, "n": 3, "flag": True, "cfg": {"b": 1, "a": 2}})
    assert len(params["text"]) == 6000 and params["text"].endswith("...")
    assert (params["n"], params["flag"], params["cfg"]) == ("3", "true", '{"a": 2, "b": 1}')
    tags = end_tags("failed", "m" * 9000)
    assert len(tags["polyaxon.message"]) == 8000


def test_metric_points_keep_steps_times_and_non_finite_values() -> None:
    records = [
        {"step": 0, "timestamp": "2026-01-01T00:00:00+00:00", "loss": 1.0, "acc": 0.5},
        {"step": None, "timestamp": "2026-01-01T00:00:01+00:00", "loss": "nan"},
        {"step": 2, "timestamp": "not a time", "loss": "inf", "label": "cat", "ok": True},
    ]
    points = metric_points(records, now_ms=42)
    assert points[:2] == [("loss", 1.0, 1767225600000, 0), ("acc", 0.5, 1767225600000, 0)]
    assert (
        points[2][0] == "loss"
        and math.isnan(points[2][1])
        and points[2][2:]
        == (
            1767225601000,
            0,
        )
    )
    assert points[3] == ("loss", math.inf, 42, 2)
    assert len(points) == 4  # a string or a bool is no metric


def test_outputs_are_metrics_unless_logged_else_tags() -> None:
    metrics, tags = output_values({"loss": 0.1, "acc": 0.9, "model": "m.pt", "n": 3}, ["loss"])
    assert metrics == {"acc": 0.9, "n": 3.0}
    assert tags == {"polyaxon.output.loss": "0.1", "polyaxon.output.model": "m.pt"}


def test_start_tags_name_the_run_and_its_polyaxon_tags() -> None:
    tags = start_tags(
        uuid="u1",
        project="p",
        op="train",
        kind="pytorchjob",
        tags=["demo", "a:b", "polyaxon.uuid"],
        description="why",
        username="me",
        iteration=3,
    )
    assert tags["polyaxon.uuid"] == "u1"  # a Polyaxon tag never overwrites ours
    assert tags["polyaxon.tags"] == "demo,a:b,polyaxon.uuid"
    assert tags["demo"] == "" and "a:b" not in tags
    assert (tags["mlflow.note.content"], tags["mlflow.user"]) == ("why", "me")
    assert (tags["polyaxon.kind"], tags["polyaxon.iteration"]) == ("pytorchjob", "3")


def test_statuses_and_end_tags() -> None:
    assert [mlflow_status(s) for s in ("succeeded", "failed", "stopped", "skipped")] == [
        "FINISHED",
        "FAILED",
        "KILLED",
        "KILLED",
    ]
    tags = end_tags("succeeded", "", flow_run_id="f", cached_from="u0")
    assert tags == {
        "polyaxon.status": "succeeded",
        "prefect.flow_run_id": "f",
        "polyaxon.cached_from": "u0",
    }


@pytest.mark.parametrize(
    ("uri", "switch", "on"),
    [
        ("", "", False),
        ("  ", "", False),
        ("sqlite:///m.db", "", True),
        ("sqlite:///m.db", "1", True),
        ("sqlite:///m.db", "0", False),
        ("sqlite:///m.db", "False", False),
        ("sqlite:///m.db", "off", False),
        ("sqlite:///m.db", "no", False),
    ],
)
def test_the_mirror_is_on_with_a_uri_unless_switched_off(
    monkeypatch: pytest.MonkeyPatch, uri: str, switch: str, on: bool
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("POLYAXON_PREFECT_MLFLOW", switch)
    assert enabled() is on


def test_the_metrics_file_is_read_line_by_line_and_a_new_attempts_file_from_its_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "metrics.jsonl"
    assert _tail(path, 0, b"") == ([], 0, b"")  # not written yet
    first = '{"step": 0, "timestamp": "2026-01-01T00:00:00.000001+00:00", "loss": 3}\n'
    path.write_text(first + '{"step": 1, "loss": 2}\n{"step": 2, "lo', encoding="utf-8")
    records, offset, head = _tail(path, 0, b"")
    assert [r["step"] for r in records] == [0, 1]  # the cut last line waits
    path.write_text(path.read_text() + 'ss": 1}\n', encoding="utf-8")
    records, offset, head = _tail(path, offset, head)
    assert records == [{"step": 2, "loss": 1}]
    # a retried attempt's file, longer than what was read: read from its own start
    again = first.replace("000001", "000002")
    path.unlink()
    path.write_text(again + "".join(f'{{"step": {s}, "loss": 0}}\n' for s in (1, 2, 3, 4)))
    records, offset, head = _tail(path, offset, head)
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert _tail(path, offset, head)[0] == []
