"""job.log never claims the full output when a write failed: a file size limit (``ulimit -f``,
which works without root, unlike a read-only folder) cuts it, and the run is told once, at the
exact line, in the relayed lines, the skipped-lines note and the result."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.fault, pytest.mark.process]

LIMIT = 64 * 1024
DRIVER = r"""
import json, sys
from pathlib import Path
from polyaxon_prefect.runtime.session._process import run_process
lines = []
result = run_process(
    [sys.executable, "-c", "for i in range(20000): print('line %06d ' % i + 'x' * 40)"],
    env={"PATH": "/usr/bin:/bin", "POLYAXON_PREFECT_LOG_LINES_PER_SECOND": "50"},
    cwd=Path(sys.argv[1]), on_line=lambda _s, line: lines.append(line),
    log_path=Path(sys.argv[1]) / "logs" / "job.log",
)
notes = [line for line in lines if line.startswith("[polyaxon-prefect]")]
print(json.dumps({"code": result.returncode, "cut": result.log_cut, "notes": notes}))
"""


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_log_cut_by_a_file_size_limit_says_where_once(tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_file_size,
        env={**os.environ, "POLYAXON_PREFECT_LOG_LINES_PER_SECOND": "50"},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    log = tmp_path / "logs" / "job.log"
    whole = log.read_bytes().count(b"\n")

    assert report["code"] == 0
    assert report["cut"].startswith(f"job.log was cut at line {whole + 1}: ")
    assert "file size limit" in report["cut"]
    assert log.stat().st_size <= LIMIT
    cut_notes = [note for note in report["notes"] if "was cut at line" in note]
    assert cut_notes[0] == f"[polyaxon-prefect] {report['cut']}"
    skipped = [note for note in report["notes"] if "output lines not shown here" in note]
    assert skipped and all("the full output is in" not in note for note in skipped)
    assert time.monotonic() - started < 30
