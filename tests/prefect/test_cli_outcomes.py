"""The read-back commands against a real server, on the outcomes scripts and people meet: `ls`
keeps its lines readable under a very long run name (cut with an ellipsis; ``--json`` has it
whole), ``get --json`` of no such run is JSON, not only a line on stderr."""

from __future__ import annotations

import json

from prefect import flow

from tests.prefect.conftest import cli_in

LONG = "a-very-long-operation-name-" * 12  # 324 characters


@flow(name="ls-width", flow_run_name=LONG)
def _long_named() -> int:
    return 1


def test_ls_cuts_a_long_name_and_json_keeps_it(prefect_server: str) -> None:
    state = _long_named(return_state=True)
    run_id = str(state.state_details.flow_run_id)

    shown = cli_in(prefect_server, "ls", "--limit", "50")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if run_id in line]
    assert line.startswith(LONG[:39] + "\u2026 "), line
    assert len(line) < 140, "name (40), kind, status, started, duration and a 36-character id"

    listed = cli_in(prefect_server, "ls", "--limit", "50", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {row["id"]: row["name"] for row in json.loads(listed.stdout)}[run_id] == LONG


def test_get_json_of_no_such_run_is_json(prefect_server: str) -> None:
    done = cli_in(prefect_server, "get", "no-run-has-this-name", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert json.loads(done.stdout) == {
        "error": "no run with the id, name or uuid `no-run-has-this-name`"
    }
