"""``resume RUN --more 1000000000`` grew to 22.6 GB until the kernel killed it (a random sweep
draws its new trials up front). Past the sweep limit it is one line, exit 2, before the study
or the run directory is touched: the run reads back as it was."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run
from tests.prefect.conftest import cli_in

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]


def test_resume_more_past_the_limit_is_one_line_and_changes_nothing(
    tmp_path: Path, prefect_server: str
) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "version: 1.1\nkind: operation\nname: bound-sweep\n"
        "matrix:\n  kind: random\n  numRuns: 2\n  seed: 1\n"
        "  params: {lr: {kind: uniform, value: [0.0, 1.0]}}\n"
        "component:\n  name: bound\n  inputs: [{name: lr, type: float}]\n"
        f'  run: {{kind: job, container: {{command: ["{sys.executable}", -c, "pass"]}}}}\n'
    )
    first = run(path)
    assert first.status == "succeeded", first.message
    project = Path(first.artifacts_path).parent
    runs_before = sorted(p.name for p in project.iterdir())

    done = cli_in(prefect_server, "resume", first.uuid, "--more", "1000000000")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "error: --more: 1,000,000,000 more would make the sweep 1,000,000,002 trials, more than "
        "the limit of 1,000,000 (POLYAXON_PREFECT_MAX_GRID): ask for fewer, or raise it"
    ]
    assert sorted(p.name for p in project.iterdir()) == runs_before  # no run directory made
    shown = cli_in(prefect_server, "get", first.uuid, "--json")
    assert shown.returncode == 0, shown.stderr
    trials = json.loads(shown.stdout)["trials"]
    assert sorted(t["index"] for t in trials) == [0, 1]  # the sweep as it ended, not grown
