"""Each sweep's own journal: never slowed by a neighbour's, damage named in one line, and a
journal whose last line was cut short still resumes (real sweeps on the session's server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run

sys.path.insert(0, str(Path(__file__).parent))
from test_sweep import marks, sweep_file

pytestmark = [pytest.mark.fault]

TWO = """\
kind: grid
concurrency: 2
params:
  x: {kind: choice, value: [0.1, 0.2]}
"""

FOUR = """\
kind: grid
concurrency: 2
params:
  x: {kind: choice, value: [0.1, 0.2, 0.3, 0.4]}
"""

CLI = [sys.executable, "-m", "polyaxon_prefect.cli", "run"]


def _neighbour_journal(path: Path, trials: int) -> None:
    """Valid journal records of another op's big sweep (what a killed sweep leaves)."""
    worker = "neighbour-worker"
    name = "other-0123456789-20240101-000000-abcd"
    lines = [json.dumps({"op_code": 0, "worker_id": worker, "study_name": name, "directions": [1]})]
    start = {
        "op_code": 4,
        "worker_id": worker,
        "study_id": 0,
        "datetime_start": "2024-01-01T00:00:00",
    }
    for number in range(trials):
        attr = {"params": {"x": number, "pad": "p" * 200}}
        lines += [
            json.dumps(start),
            json.dumps({"op_code": 8, "worker_id": worker, "trial_id": number, "user_attr": attr}),
            json.dumps({"op_code": 6, "worker_id": worker, "trial_id": number, "state": 1,
                        "values": [1.0], "datetime_complete": "2024-01-01T00:00:01"}),
        ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _journals(root: Path) -> set[Path]:
    return set((root / ".sweeps").glob("*.journal"))


def test_a_sweep_never_opens_a_neighbours_huge_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "artifacts"
    monkeypatch.setenv("POLYAXON_PREFECT_ARTIFACTS_ROOT", str(root))
    path = sweep_file(tmp_path, TWO, name="small")

    assert run(path).status == "succeeded"  # the first run registers the flows: not timed
    started = time.monotonic()
    assert run(path).status == "succeeded"
    baseline = time.monotonic() - started
    first = _journals(root)

    neighbour = root / ".sweeps" / "other-0123456789-20240101-000000-abcd.journal"
    _neighbour_journal(neighbour, 40_000)  # about 22 MB: 7 s to replay on a laptop
    os.link(neighbour, root / "sweeps.journal")  # the shared file of earlier versions, too
    size, mtime = neighbour.stat().st_size, neighbour.stat().st_mtime_ns
    assert size > 20_000_000

    started = time.monotonic()
    result = run(path)
    elapsed = time.monotonic() - started

    assert result.status == "succeeded", result.message
    [mine] = _journals(root) - first - {neighbour}
    assert mine.parent == neighbour.parent and mine.stat().st_size < 100_000
    assert (neighbour.stat().st_size, neighbour.stat().st_mtime_ns) == (size, mtime)
    # opening the neighbour would add its replay (7 s here) to a sweep of about a second
    assert elapsed < 2.0 * baseline + 1.5, (elapsed, baseline)


def _cli(args: list[str], root: Path, api_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREFECT_API_URL": api_url, "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(root)}
    env.pop("POLYAXON_PREFECT_DEBUG", None)
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env, timeout=180, check=False
    )


def _no_process_left(folder: Path) -> None:
    """No trial process of this test is still running (their command line names ``folder``)."""
    left = subprocess.run(["pgrep", "-f", str(folder)], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_a_damaged_journal_is_one_line_naming_the_file_and_exit_1(
    tmp_path: Path, prefect_server: str
) -> None:
    root = tmp_path / "artifacts"
    path = sweep_file(tmp_path, TWO)
    assert _cli(["-f", str(path)], root, prefect_server).returncode == 0
    [journal] = _journals(root)
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(3, '{"op_code": 8, "worker_id": "w", "trial_id": 0, "user_at\n')
    journal.write_text("".join(lines), encoding="utf-8")

    done = _cli(["-f", str(path), "--resume"], root, prefect_server)

    assert done.returncode == 1, done.stderr
    [line] = [x for x in done.stderr.splitlines() if str(journal) in x]
    assert line.count(f"{journal}:4:") == 1 and "damaged sweep journal" in line, line
    assert "move" in line and "--storage" in line, line
    assert "Traceback" not in done.stderr and "JSONDecodeError" not in done.stderr
    _no_process_left(tmp_path)


def test_a_journal_cut_short_still_resumes(tmp_path: Path, prefect_server: str) -> None:
    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.prefect._dispatch import OpRequest
    from polyaxon_prefect.prefect.sweep._sweep_flow import study_prefix
    from polyaxon_prefect.search._optuna._study import SweepStudy

    root = tmp_path / "artifacts"
    path = sweep_file(tmp_path, FOUR)
    loaded = load_polyaxonfile(path)
    name = f"{study_prefix(OpRequest(loaded=loaded))}-20240101-000000-abcd"
    study = SweepStudy.open(loaded.operation.matrix, study_name=name, artifacts_root=root)
    for _ in range(2):  # two trials done by a parent that was then killed mid-write
        suggestion = study.ask()
        assert suggestion is not None
        study.tell(suggestion.number, status="succeeded", value=suggestion.params["x"])
    [journal] = _journals(root)
    whole = journal.read_bytes()
    with journal.open("ab") as file:
        file.write(b'{"op_code":8,"worker_id":"w","trial_id":2,"user_attr":{"sta')

    done = _cli(["-f", str(path), "--resume", "--json"], root, prefect_server)

    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["status"] == "succeeded"
    assert [t["params"]["x"] for t in payload["trials"]] == [0.1, 0.2, 0.3, 0.4]
    assert Counter(m["params"]["x"] for m in marks(tmp_path)) == {0.3: 1, 0.4: 1}
    assert "cut short" in done.stderr and f"{journal}.torn" in done.stderr
    assert journal.read_bytes().startswith(whole)  # the good lines kept, then the resume's
    assert Path(f"{journal}.torn").read_bytes().startswith(b'{"op_code":8')
    assert "Traceback" not in done.stderr
    _no_process_left(tmp_path)
