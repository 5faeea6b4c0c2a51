"""The session reaper signals only what is still the session's: a process group it was told
about whose id now names another program's group (a group id is reused once the group is gone)
is left alone, while the session's own group is stopped. Real processes, the reaper as the CLI
starts it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from polyaxon_prefect.runtime.session import _reaper
from polyaxon_prefect.runtime.session._reaper import SESSION_ENV

pytestmark = [pytest.mark.process, pytest.mark.fault]


def _sleeper(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "120"], env=env, start_new_session=True)


def test_a_group_id_that_is_no_longer_the_sessions_is_never_signalled() -> None:
    session = uuid.uuid4().hex
    clean = {k: v for k, v in os.environ.items() if k != SESSION_ENV}
    bystander = _sleeper(clean)  # another program's group, under an id the reaper was told
    job = _sleeper({**clean, SESSION_ENV: session})
    try:
        reaper = subprocess.Popen(
            [sys.executable, "-I", _reaper.__file__, session],
            stdin=subprocess.PIPE,
            env=clean,
            text=True,
            start_new_session=True,
        )
        assert reaper.stdin is not None
        reaper.stdin.write(f"group {bystander.pid}\ngroup {job.pid}\nserver {bystander.pid}\n")
        reaper.stdin.close()  # as when the run's process is killed -9
        assert reaper.wait(timeout=30) == 0
        assert job.wait(timeout=10) < 0, "the session's own group was not stopped"
        time.sleep(0.2)
        assert bystander.poll() is None, "another program's group was signalled"
    finally:
        for process in (bystander, job):
            process.kill()
            process.wait()
