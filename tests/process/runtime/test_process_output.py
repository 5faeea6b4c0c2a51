"""Heavy and long output of a real child process: the full log on disk, a bounded relay,
secrets masked across the 64 KiB pieces of an endless line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.runtime.session._process import ENV_LOG_LINES_PER_SECOND, run_process

pytestmark = pytest.mark.process

PY = sys.executable
SECRET = "TOPSECRET-0123456789"


def _env() -> dict[str, str]:
    return dict(os.environ)


@pytest.mark.parametrize("offset", [1, 5, len(SECRET) - 1])
def test_a_secret_across_the_64_kib_cut_of_a_long_line_is_masked(tmp_path: Path, offset: int):
    # The secret starts `offset` characters before the first 64 KiB piece ends.
    prefix = 64 * 1024 - (len(SECRET) - offset)
    code = f"print('a' * {prefix} + {SECRET!r} + 'b' * 100); print('{SECRET} again')"
    lines: list[str] = []
    log = tmp_path / "logs" / "job.log"

    result = run_process(
        [PY, "-c", code],
        env=_env(),
        cwd=tmp_path,
        on_line=lambda _s, line: lines.append(line),
        secrets=[SECRET],
        log_path=log,
    )

    assert result.succeeded
    text = log.read_text(encoding="utf-8")
    assert SECRET not in text and SECRET not in "".join(lines)
    assert SECRET not in "".join(result.stdout_tail)
    assert text.count("***") == 2
    assert "".join(text.splitlines()[:-1]).replace("***", "X") == "a" * prefix + "X" + "b" * 100


def test_a_flood_is_all_in_the_log_file_and_bounded_in_the_relay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(ENV_LOG_LINES_PER_SECOND, "50")
    code = "import sys\nfor i in range(200000): sys.stdout.write(f'line {i}\\n')\nprint('end')"
    relayed: list[str] = []
    log = tmp_path / "job.log"

    result = run_process(
        [PY, "-c", code],
        env=_env(),
        cwd=tmp_path,
        on_line=lambda _s, line: relayed.append(line),
        log_path=log,
    )

    assert result.succeeded
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200001 and lines[-1] == "end" and lines[12345] == "line 12345"
    notes = [line for line in relayed if "output lines not shown here" in line]
    assert notes and str(log) in notes[-1]
    shown = len(relayed) - len(notes)
    assert shown <= 50 + 50 * result.duration + 1
    assert shown + result.lines_not_relayed == 200001
    assert result.stdout_tail[-1] == "end"  # the tail is exact, relay or not


def test_the_relay_can_be_unbounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV_LOG_LINES_PER_SECOND, "inf")
    relayed: list[str] = []

    result = run_process(
        [PY, "-c", "for i in range(3000): print(i)"],
        env=_env(),
        cwd=tmp_path,
        on_line=lambda _s, line: relayed.append(line),
    )

    assert result.lines_not_relayed == 0 and len(relayed) == 3000
