"""The reaper's `mark_crashed` against stubbed Prefect API answers (no server, no processes)."""

from __future__ import annotations

from typing import Any

import pytest

from polyaxon_prefect.runtime import _reaper


def _stub_api(monkeypatch: pytest.MonkeyPatch, answers: dict[str, object]) -> list[str]:
    """Answer each filter call from ``answers`` (by the kind filtered); record set_state calls."""
    crashed: list[str] = []

    def post(url: str, body: Any) -> object:
        if url.endswith("/set_state"):
            crashed.append(url.removeprefix("http://api/").removesuffix("/set_state"))
            return None
        if url.endswith("/task_runs/filter"):
            return answers["tasks"]
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
