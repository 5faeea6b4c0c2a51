"""`local_run_settings`: heartbeats off for our runs, its copy of the settings made once."""

from __future__ import annotations

from prefect.settings import (
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    get_current_settings,
    temporary_settings,
)

from polyaxon_prefect.prefect._settings import local_run_settings


def test_heartbeats_are_off_inside_and_back_after(monkeypatch) -> None:
    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    monkeypatch.delenv("PREFECT_RUNNER_HEARTBEAT_FREQUENCY", raising=False)
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 180}):
        with local_run_settings():
            assert get_current_settings().flows.heartbeat_frequency is None
        assert get_current_settings().flows.heartbeat_frequency == 180


def test_the_copy_is_made_once_per_settings_and_follows_a_change(monkeypatch) -> None:
    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    monkeypatch.delenv("PREFECT_RUNNER_HEARTBEAT_FREQUENCY", raising=False)
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 180}):
        with local_run_settings():
            first = get_current_settings()
        with local_run_settings():
            assert get_current_settings() is first  # the same copy: not validated again
    with (
        temporary_settings(
            updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 180, "PREFECT_API_REQUEST_TIMEOUT": 7.0}
        ),
        local_run_settings(),
    ):
        changed = get_current_settings()
        assert changed is not first
        assert changed.api.request_timeout == 7.0  # what the caller set since is kept
        assert changed.flows.heartbeat_frequency is None


def test_a_heartbeat_the_user_chose_is_kept(monkeypatch) -> None:
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}), local_run_settings():
        assert get_current_settings().flows.heartbeat_frequency == 60
