"""The CLI's side of the warm runner (`polyaxon_prefect.client.server._runner`): when it steps aside
(the CLI then runs ``run`` itself), and the socket it trusts. The runs themselves are in
tests/integration/test_warm_runner.py."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from polyaxon_prefect.client.server import _runner


@pytest.mark.parametrize("value", ["0", "false", "No", " off "])
def test_the_switch_turns_the_runner_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(_runner.ENV_RUNNER, value)
    assert not _runner.runner_enabled()
    assert _runner.warm_run(["run", "-f", "x.yaml"]) is None


def test_no_runner_with_a_temporary_server_per_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(_runner.ENV_RUNNER, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setenv("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", "0")
    assert _runner._idle_timeout_zero()
    assert _runner.warm_run(["run", "-f", "x.yaml"]) is None


def test_only_a_socket_of_this_user_that_no_one_else_may_open_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    assert _runner._runner_socket() is None  # none there
    path = tmp_path / _runner.SOCKET_FILE
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        os.chmod(path, 0o660)
        assert _runner._runner_socket() is None  # its group could submit runs
        os.chmod(path, 0o600)
        assert _runner._runner_socket() == path
    path.unlink()
    path.write_text("not a socket")
    os.chmod(path, 0o600)
    assert _runner._runner_socket() is None


def test_a_long_socket_path_is_reached_through_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / ("deep" * 30)
    folder.mkdir()
    path = folder / _runner.SOCKET_FILE
    address = _runner.socket_address(path)
    assert len(address) < 100 and address.startswith("/proc/self/fd/")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(address)
        listener.listen(1)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(_runner.socket_address(path))
    assert path.exists()


def test_exit_codes_read_as_a_shell_reads_them() -> None:
    assert _runner.exit_code_of(0) == 0
    assert _runner.exit_code_of(1) == 1
    assert _runner.exit_code_of(-2) == 130  # ended by SIGINT
    assert _runner.exit_code_of(-9) == 137


@pytest.mark.parametrize(
    ("api_url", "idle", "taken"),
    [
        ("http://127.0.0.1:4321/api", "0", True),  # this home's server, as `server start` says
        ("http://127.0.0.1:4321/api/", "600", True),
        ("http://127.0.0.1:9999/api", "600", False),  # another server: the CLI runs it
    ],
)
def test_a_prefect_api_url_naming_this_homes_server_goes_through_its_runner(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api_url: str, idle: str, taken: bool
) -> None:
    from polyaxon_prefect.client.server import _local_server, _thin_server

    monkeypatch.delenv(_runner.ENV_RUNNER, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setenv("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", idle)
    # the user's URL, as `thin_server` reads it from the environment or the profile
    monkeypatch.setattr(
        _thin_server, "thin_server", lambda: _thin_server.ThinServer(api_url.rstrip("/"))
    )
    record = _local_server.BackgroundServer(
        pid=os.getpid(), url="http://127.0.0.1:4321", log="", database=""
    )
    monkeypatch.setattr(_local_server, "running_server", lambda: record)
    path = tmp_path / _runner.SOCKET_FILE
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(1)
        conn = _runner._connect()
        assert (conn is not None) is taken
        if conn is not None:
            conn.close()
