"""The thin client's pure parts are the flow layer's: one state table, one status list, the
same files of the background server and of the sessions (no second copy that can drift)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from prefect.client.schemas.objects import State, StateType

from polyaxon_prefect.client import STATE_TYPES, STATUSES, status_of
from polyaxon_prefect.client import _cli as thin_cli
from polyaxon_prefect.client import _server as thin_server
from polyaxon_prefect.prefect._states import STATE_TYPES as FLOW_STATE_TYPES
from polyaxon_prefect.prefect._states import polyaxon_status
from polyaxon_prefect.prefect.server import _background_server as background
from polyaxon_prefect.runtime.session._session import journal_dir
from polyaxon_prefect.specs import Status


def test_the_status_words_and_state_types_are_the_flow_layers() -> None:
    assert list(STATUSES) == [str(s) for s in Status]
    assert {t.value for t in StateType} == {t for types in STATE_TYPES.values() for t in types}
    assert FLOW_STATE_TYPES is STATE_TYPES
    for state_type in StateType:
        for name in ("", "Skipped", "UpstreamFailed", "AwaitingRetry", "Retrying", "Late"):
            state = State(type=state_type, name=name or None)
            assert status_of(state_type.value, name) == polyaxon_status(state)


def test_the_files_read_are_the_ones_the_server_and_the_sessions_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    assert thin_server.prefect_home() / thin_server.RECORD_FILE == background._record_path()
    assert thin_server.prefect_home() / thin_server.LEASES_DIR == background.leases_dir()
    assert thin_server.SERVER_MODULE == background._SERVER_MODULE
    assert thin_server.resolve_artifacts_root() / ".sessions" == journal_dir()


def test_only_plain_command_lines_and_servers_known_without_prefect_go_thin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert thin_cli._ls_args(["--limit", "5", "--json"]) == {
        "status": None,
        "limit": 5,
        "json": True,
    }
    for words in (["-q", "x"], ["--limit", "0"], ["--status", "done"], ["--json", "--json"]):
        assert thin_cli._ls_args(words) is None, words
    assert thin_cli._get_args(["a-run"]) == {"run": "a-run", "json": False}
    for words in (["-w", "x"], [], ["a", "b"], ["--help"]):
        assert thin_cli._get_args(words) is None, words

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api/")
    assert "prefect.settings" in sys.modules and thin_server.thin_server() is None
    monkeypatch.delitem(sys.modules, "prefect.settings")
    assert thin_server.thin_server() == thin_server.ThinServer("http://127.0.0.1:9/api")
    monkeypatch.setenv("PREFECT_API_KEY", "k")  # auth is Prefect's to send
    assert thin_server.thin_server() is None
    monkeypatch.delenv("PREFECT_API_KEY")
    sessions = tmp_path / "artifacts" / ".sessions"
    sessions.mkdir(parents=True)
    (sessions / "s.journal").write_text("pid 999999999\ntarget home:x\n", encoding="utf-8")
    assert thin_server.thin_server() is None  # `connect` settles a dead session's runs first
