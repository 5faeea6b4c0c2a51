"""The reaper's `mark_crashed` against stubbed Prefect API answers (no server, no processes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polyaxon_prefect.runtime.session import _reaper

states: list[str] = []
"""The state type of each set_state call of the current test, in order."""


def _stub_api(monkeypatch: pytest.MonkeyPatch, answers: dict[str, object]) -> list[str]:
    """Answer each filter call from ``answers`` (by the kind filtered); record set_state calls."""
    states.clear()
    crashed: list[str] = []

    def post(url: str, body: Any) -> object:
        if url.endswith("/set_state"):
            crashed.append(url.removeprefix("http://api/").removesuffix("/set_state"))
            states.append(body["state"]["type"])
            return None
        if url.endswith("/task_runs/filter"):
            return answers["tasks"]
        if "CANCELLED" in json.dumps(body):  # is a top-level run being stopped?
            return answers.get("stopped", [])
        is_children = "parent_flow_run_id" in body["flow_runs"]
        return answers["children" if is_children else "runs"]

    monkeypatch.setattr(_reaper, "_post", post)
    return crashed


def test_crashes_the_runs_child_runs_and_task_runs_the_api_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crashed = _stub_api(
        monkeypatch,
        {"runs": [{"id": "r1"}], "children": [{"id": "c1"}], "tasks": [{"id": "t1"}]},
    )
    _reaper.mark_crashed("http://api", ["r1"])
    assert crashed == ["flow_runs/r1", "flow_runs/c1", "task_runs/t1"]


@pytest.mark.parametrize(
    "answer",
    [None, {"detail": "Not Found"}, "<html>proxy error</html>", [{"name": "no id"}, 3]],
    ids=["empty", "error-body", "text", "no-ids"],
)
def test_an_answer_that_is_not_a_list_of_runs_names_no_run(
    monkeypatch: pytest.MonkeyPatch, answer: object
) -> None:
    crashed = _stub_api(monkeypatch, {"runs": answer, "children": answer, "tasks": answer})
    _reaper.mark_crashed("http://api", ["r1"])
    assert crashed == []


def test_a_run_being_stopped_ends_cancelled_with_its_children_not_crashed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`polyaxon-prefect stop` set the run Cancelling, then its process died (a worker killed
    it): the user asked for a stop, so every run left ends Cancelled (``stopped``)."""
    crashed = _stub_api(
        monkeypatch,
        {
            "runs": [{"id": "r1"}],
            "children": [{"id": "c1"}],
            "tasks": [{"id": "t1"}],
            "stopped": [{"id": "r1"}],
        },
    )
    _reaper.mark_crashed("http://api", ["r1"])
    assert crashed == ["flow_runs/r1", "flow_runs/c1", "task_runs/t1"]
    assert states == ["CANCELLED"] * 3


def test_a_running_run_still_ends_crashed(monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_api(monkeypatch, {"runs": [{"id": "r1"}], "children": [], "tasks": [], "stopped": []})
    _reaper.mark_crashed("http://api", ["r1"])
    assert states == ["CRASHED"]


def test_a_run_said_final_is_not_checked_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    crashed = _stub_api(monkeypatch, {"runs": [{"id": "r2"}], "children": [], "tasks": []})
    lines = "api http://api\nflow-run r1\nflow-run r2\nfinal r1\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert _reaper.main(["_reaper.py"]) == 0
    assert crashed == ["flow_runs/r2"]  # r1 ended final; r2 did not say so

    asked: list[str] = []
    monkeypatch.setattr(_reaper, "_post", lambda url, body: asked.append(url))
    monkeypatch.setattr("sys.stdin", io.StringIO("api http://api\nflow-run r1\nfinal r1\n"))
    assert _reaper.main(["_reaper.py"]) == 0
    assert asked == []  # a clean end: no call to a busy server


@pytest.mark.parametrize(
    ("name", "wait"), [("podman", ["--time", "3"]), ("docker", [])], ids=["podman", "docker"]
)
def test_the_session_containers_are_removed_with_the_runs_grace_not_podmans_ten_seconds(
    tmp_path: Path, name: str, wait: list[str]
) -> None:
    """A container whose PID 1 ignores SIGTERM (`sleep`) took Podman's default 10 s to go."""
    calls = tmp_path / "calls"
    cli = tmp_path / name  # a stand-in CLI: lists one container, records each command line
    cli.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" = ps ] && echo c0ffee\nexit 0\n', encoding="utf-8"
    )
    cli.chmod(0o755)
    _reaper._remove_containers(str(cli), "s1")
    lines = calls.read_text(encoding="utf-8").splitlines()
    assert lines[1] == " ".join(["rm", "-f", *wait, "c0ffee"]), lines
