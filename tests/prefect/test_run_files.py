"""``invalidate RUN`` and ``artifacts RUN [--download DIR]`` on real runs of the test server,
read by the CLI in a second process: a dropped cache entry makes the next identical run execute
(counted by the marker lines its process appends), and ``artifacts`` lists and copies exactly
what the run wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from polyaxon_prefect.prefect import run
from tests.prefect.conftest import cli_in

PY = sys.executable


def _marking(name: str, marker: Path, cache: str) -> str:
    code = f"open({str(marker)!r}, 'a').write('x' + chr(10))"
    return (
        f"version: 1.1\nkind: component\nname: {name}\n{cache}"
        f'run: {{kind: job, container: {{command: ["{PY}", -c, "{code}"]}}}}\n'
    )


MARKS_ARE_NOT_CODE = "*.marks\n"
"""The marks the ops write next to their Polyaxonfile are their output, not their code (the op
cache hashes the working folder's files)."""


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_invalidate_makes_the_next_identical_job_execute(tmp_path: Path, prefect_server: str):
    marker = tmp_path / "job.marks"
    (tmp_path / ".polyaxonignore").write_text(MARKS_ARE_NOT_CODE)
    path = tmp_path / "cached.yaml"
    path.write_text(_marking("invalidate-job", marker, "cache: {disable: false}\n"))
    first = run(path)
    hit = run(path)
    assert (first.status, hit.status, hit.cached) == ("succeeded", "succeeded", True)
    assert _lines(marker) == 1

    done = cli_in(prefect_server, "invalidate", str(hit.flow_run_id))  # the hit names the entry
    assert done.returncode == 0, done.stderr
    assert "dropped 1 cache entry" in done.stdout

    third = run(path)
    assert (third.status, third.cached) == ("succeeded", False)
    assert _lines(marker) == 2  # executed again
    assert run(path).cached  # and cached again from then on

    again = cli_in(prefect_server, "invalidate", str(first.flow_run_id), "--json")
    assert again.returncode == 0, again.stderr
    shown = json.loads(again.stdout)
    assert shown["dropped"] == [] and first.uuid in shown["uuids"]  # third's entry is another
    nothing = cli_in(prefect_server, "invalidate", "no-such-run-name")
    assert nothing.returncode == 1
    assert nothing.stderr.strip().splitlines() == [
        "error: no run with the id, name or uuid `no-such-run-name`"
    ]


def test_invalidate_a_dag_drops_its_ops_entries(tmp_path: Path, prefect_server: str):
    (tmp_path / ".polyaxonignore").write_text(MARKS_ARE_NOT_CODE)
    for op in ("a", "b"):
        (tmp_path / f"{op}.yaml").write_text(_marking(f"op-{op}", tmp_path / f"{op}.marks", ""))
    dag = tmp_path / "dag.yaml"
    dag.write_text(
        "version: 1.1\nkind: component\nname: invalidate-dag\nrun:\n  kind: dag\n"
        "  operations:\n  - {name: a, pathRef: a.yaml}\n"
        "  - {name: b, pathRef: b.yaml, dependencies: [a]}\n"
    )
    first = run(dag)
    assert run(dag).status == "succeeded"
    assert (_lines(tmp_path / "a.marks"), _lines(tmp_path / "b.marks")) == (1, 1)

    done = cli_in(prefect_server, "invalidate", str(first.flow_run_id), "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["dropped"]) == 2

    assert run(dag).status == "succeeded"
    assert (_lines(tmp_path / "a.marks"), _lines(tmp_path / "b.marks")) == (2, 2)


WRITER = (
    "import os, pathlib; from polyaxon_prefect import tracking; "
    "root = pathlib.Path(tracking.get_artifacts_path()); "
    "(root / 'plots').mkdir(exist_ok=True); "
    "(root / 'plots' / 'loss.txt').write_text('0.5 0.25'); "
    "(root / 'model.bin').write_bytes(os.urandom(1000)); "
    "tracking.log_outputs(loss=0.25)"
)


def test_artifacts_lists_and_downloads_what_the_run_wrote(tmp_path: Path, prefect_server: str):
    path = tmp_path / "writer.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: artifacts-writer\n"
        "outputs: [{name: loss, type: float}]\n"
        f'run: {{kind: job, container: {{command: ["{PY}", -c, "{WRITER}"]}}}}\n'
    )
    result = run(path)
    assert result.status == "succeeded", result.message
    run_dir = Path(str(result.artifacts_path))
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    written = {p.relative_to(run_dir).as_posix(): p.stat().st_size for p in files}
    assert {"plots/loss.txt", "model.bin"} <= set(written)

    listed = cli_in(prefect_server, "artifacts", str(result.uuid), "--json")
    assert listed.returncode == 0, listed.stderr
    files = {f["path"]: f["size"] for f in json.loads(listed.stdout)["files"]}
    assert files == written
    assert files["model.bin"] == 1000

    target = tmp_path / "copy"
    copied = cli_in(prefect_server, "artifacts", str(result.flow_run_id), "--download", str(target))
    assert copied.returncode == 0, copied.stderr
    assert f"copied {len(written)} files" in copied.stdout
    for name in written:
        assert (target / name).read_bytes() == (run_dir / name).read_bytes()

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    refused = cli_in(prefect_server, "artifacts", str(result.uuid), "--download", str(blocked))
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot copy the run's files into {blocked}: ")
