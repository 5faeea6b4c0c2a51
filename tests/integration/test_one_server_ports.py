"""One server per Prefect home where another program holds the configured port: each home's
first command starts its own on a free port, its next command finds it by its record. Real CLI
processes and the real background server.

A file of its own (its test runs a minute or more): the parallel suite hands it to a worker of
its own, beside the other tests of `test_one_server.py`."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.conftest import seed_prefect_home
from tests.integration.conftest import new_home_env
from tests.integration.test_one_server import STARTING, USING, _record, _run, home

__all__ = ["home"]  # the fixture, shared with test_one_server.py

pytestmark = [pytest.mark.slow, pytest.mark.process, pytest.mark.server]


def test_homes_whose_port_another_program_holds_each_get_their_own_server_and_reuse_it(
    home: dict[str, str], tmp_path: Path, prefect_database_template: Path
) -> None:
    """Two Prefect homes on one machine, the configured port held by a plain socket (another
    user's server): each home's first command starts its server on a free port of its own and
    records it; each home's next command finds it by that record (no temporary server)."""
    port = int(home["POLYAXON_PREFECT_SERVER_PORT"])
    # each server must outlive the other home's first start (half a minute or more)
    home["POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT"] = "300"
    other_home = seed_prefect_home(tmp_path / "other-prefect", prefect_database_template)
    other = new_home_env(other_home, tmp_path / "other-artifacts", "300")
    other["POLYAXON_PREFECT_SERVER_PORT"] = str(port)
    # Each home's one run is its first command's, run in that CLI before a warm runner could
    # listen: neither server starts one (about 3 CPU s each, spent for nothing here).
    for env in (home, other):
        env["POLYAXON_PREFECT_RUNNER"] = "0"
    noop = str(tmp_path / "noop.yaml")
    taken = []
    try:
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", port))
            holder.listen()
            for env in (home, other):
                first = _run(env, "run", "-f", noop)
                assert first.returncode == 0, first.stderr
                own = int(json.loads(_record(env).read_text())["url"].rsplit(":", 1)[1])
                assert own != port
                line = first.stderr.splitlines()[0]
                assert line.startswith(STARTING.format(port=own))
                assert line.endswith(f"; port {port} is held by another program)")
                assert "temporary" not in first.stderr
                second = _run(env, "ls", "--json")
                assert second.returncode == 0, second.stderr
                assert second.stderr.splitlines()[0].startswith(USING.format(port=own))
                assert [row["name"] for row in json.loads(second.stdout)] == ["noop"]
                taken.append(own)
        assert taken[0] != taken[1]
    finally:
        _run(other, "server", "stop")
