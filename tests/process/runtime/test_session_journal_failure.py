"""A session journal that cannot be written is said once, and the run goes on: it is the second
line of defence behind the reaper, not a reason to fail (a real process, an artifacts root that
is a file, so no folder can be made under it, as root too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.fault, pytest.mark.process]

SCRIPT = """
from polyaxon_prefect.runtime.session._session import current_session
session = current_session()
session.track_flow_run("11111111-1111-1111-1111-111111111111")
session.track_flow_run("22222222-2222-2222-2222-222222222222")
session.close()
print("still running")
"""


def test_an_unwritable_journal_is_one_warning_and_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "artifacts"
    blocker.write_text("a file where the artifacts root should be")
    env = {**os.environ, "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(blocker)}
    env.pop("POLYAXON_PREFECT_SESSION", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "still running"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, done.stderr
    assert str(blocker) in warnings[0] and "would not be marked crashed" in warnings[0]
    assert "Traceback" not in done.stderr
