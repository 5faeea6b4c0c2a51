"""A process that runs twice (``cli.main`` called in-process: a notebook, a script, a test
worker) ends its first run's session; its second run gets a new session, with a reaper, whose
journal begins with its header: a journal of lines without one named no process, so no command
could ever settle it, and the thin client stepped aside for it on every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.process]

SCRIPT = """
import json, os
from polyaxon_prefect.client.server._session_journals import journal_dir
from polyaxon_prefect.runtime.session._session import current_session
first = current_session()
first.track_flow_run("11111111-1111-1111-1111-111111111111")
first.close()  # the end of `run_cli_request`: the first run's session ends
second = current_session()
second.track_flow_run("22222222-2222-2222-2222-222222222222")
second.track_flow_run("44444444-4444-4444-4444-444444444444")
first.track_flow_run("33333333-3333-3333-3333-333333333333")  # a reference kept past its end
journals = {p.stem: p.read_text() for p in journal_dir().glob("*.journal")}
print(json.dumps({
    "pid": os.getpid(), "new": second is not first, "reaper": second._reaper is not None and
    second._reaper.poll() is None, "ids": [first.id, second.id], "journals": journals,
}))
"""


def test_a_second_run_in_one_process_gets_a_new_session_and_a_journal_with_its_header(
    tmp_path: Path,
) -> None:
    api = "http://127.0.0.1:9/api"
    env = {
        **os.environ,
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
        "PREFECT_API_URL": api,
    }
    env.pop("POLYAXON_PREFECT_SESSION", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["new"] and said["reaper"]
    first, second = said["ids"]
    header = f"pid {said['pid']}\ntarget {api}\n"
    assert said["journals"] == {
        second: header
        + "flow-run 22222222-2222-2222-2222-222222222222\n"
        + "flow-run 44444444-4444-4444-4444-444444444444\n",
        first: header + "flow-run 33333333-3333-3333-3333-333333333333\n",
    }
    assert not list((tmp_path / "artifacts" / ".sessions").glob("*.journal"))  # removed at exit
