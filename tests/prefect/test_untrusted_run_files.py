"""Nothing read from the server is trusted as a path, nothing in a run directory is followed.

A DAG report is a Prefect artifact any local process can create through the loopback API: one
naming an op ``../../../../escaped-dir`` made ``artifacts --download DIR`` write outside DIR.
A job's run directory holds what its code made: ``outputs/outlink -> /outside`` was copied
whole by ``restart --copy``, and a FIFO or a link loop ended in a raw ``Error: [(...)]`` line.
Here a real job leaves a link out, a link loop and a FIFO; a forged report (made through the
API, as another process would) names its run under a climbing op name; the CLI (`cli.main`,
in this process) downloads and copies them.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run
from polyaxon_prefect.search._sweep import DATA_HEADING
from tests.prefect.conftest import cli_in

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]

MAKE = """\
import os, sys
out = os.environ["POLYAXON_PREFECT_RUN_OUTPUTS_PATH"]
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "real.txt"), "w").write("kept")
os.symlink(sys.argv[1], os.path.join(out, "outlink"))
os.symlink("loop", os.path.join(out, "loop"))
os.mkfifo(os.path.join(out, "fifo"))
"""
SKIPPED = [
    "skipped outputs/fifo: a FIFO, not copied",
    "skipped outputs/loop: a link, not copied",
    "skipped outputs/outlink: a link, not copied",
]


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _forge_dag_report(run_name: str, op: str, uuid: str) -> None:
    """A flow run named ``run_name`` with a DAG report naming op ``op`` (run ``uuid``), made
    through the API as any local process can."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import ArtifactCreate

    @flow(name="forged")
    def forged() -> None:
        """Never run: its flow run only carries the report."""

    data = {"ops": {op: {"status": "succeeded", "uuid": uuid}}, "outputs": {}}
    markdown = f"# dag\n\n{DATA_HEADING}\n\n```json\n{json.dumps(data)}\n```\n"
    with get_client(sync_client=True) as client:
        created = client.create_flow_run(forged, name=run_name)
        client.create_artifact(
            ArtifactCreate(
                key=f"{run_name}-dag",
                type="markdown",
                data=markdown,
                description=f"ops of dag `{run_name}` (run {'f' * 32})",
                flow_run_id=created.id,
            )
        )


def test_a_forged_report_and_links_in_a_run_write_nothing_outside_the_target(
    tmp_path: Path, prefect_server: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("not yours")
    (tmp_path / "make.py").write_text(MAKE)
    path = tmp_path / "links.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: links-job\n"
        f"run: {{kind: job, container: {{command: [{sys.executable}, "
        f"{tmp_path / 'make.py'}, {outside}]}}}}\n"
    )
    job = run(path)
    assert job.status == "succeeded", job.message
    before = _tree(tmp_path)

    # a report naming a climbing op: refused in one line, nothing written anywhere
    _forge_dag_report("forged-run", "../../../../escaped-dir", job.uuid)
    target = tmp_path / "d" / "e" / "f" / "g" / "download"
    forged = cli_in(prefect_server, "artifacts", "forged-run", "--download", str(target))
    assert forged.returncode == 1, forged.stdout + forged.stderr
    assert forged.stderr.splitlines() == [
        "error: the report of run `forged-run` names an op '../../../../escaped-dir' that is "
        "not a name (ASCII letters (a-z, A-Z), digits (0-9), `-` and `_`): not read as a "
        "path, nothing copied"
    ]
    assert _tree(tmp_path) == before  # no DIR, no escaped-dir

    # the job's own files: regular files copied, the link out, the loop and the FIFO named
    download = tmp_path / "download"
    done = cli_in(prefect_server, "artifacts", job.uuid, "--download", str(download))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == SKIPPED
    assert "outputs/real.txt" in done.stdout
    copied = _tree(download)
    assert (
        "outputs/real.txt" in copied and (download / "outputs" / "real.txt").read_text() == "kept"
    )
    assert not [p for p in copied if "outlink" in p or "loop" in p or "fifo" in p]
    assert not [p for p in download.rglob("*") if p.is_symlink()]
    assert _tree(outside) == ["private.txt"]

    # restart --copy: the same, then the job runs again in its copy
    again = cli_in(prefect_server, "restart", job.uuid, "--copy", "--json")
    assert again.returncode == 0, again.stderr
    lines = again.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"copying run {job.uuid}"))
    assert lines[start + 1 : start + 4] == SKIPPED
    result = json.loads(again.stdout)
    assert result["status"] == "succeeded"
    copy = Path(result["artifacts_path"])
    assert (copy / "outputs" / "outlink").is_symlink()  # the job's own, made again
    assert not [p for p in copy.rglob("private.txt")]  # never copied through the link
    assert stat.S_ISFIFO(os.lstat(copy / "outputs" / "fifo").st_mode)
    assert _tree(outside) == ["private.txt"]
