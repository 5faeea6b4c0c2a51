"""A secret follows its value: op `a` reads a token from its connection and outputs it, op
`down` receives it as a param and prints it. With masking per op, `down` (no connection of its
own) showed the token on the terminal, in Prefect's logs, in `logs` and in its `job.log`. A DAG,
its nested DAGs and its sweeps now mask every secret of any of their ops; `ops.json`, which
must hold the real outputs for `restart --from`, is its owner's only (0600).

One CLI run in a second process covers the three shapes (the top DAG's pair, a nested DAG's
pair, a sweep whose trial is that DAG), then `logs` reads it back from a third process.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from textwrap import indent

import pytest

from tests.prefect.conftest import cli_in

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.process, pytest.mark.server]

SECRET = "sup3rS3cretValue42"
READER = (
    "import os; from polyaxon_prefect import tracking; "
    "tracking.log_outputs(leak=os.environ['TOKEN'])"
)
PRINTER = "import sys; print(sys.argv[1], 'got', sys.argv[2])"
COMPONENTS = f"""\
- name: reader
  cache: {{disable: true}}
  outputs: [{{name: leak, type: str}}]
  run:
    kind: job
    connections: [creds]
    container: {{command: [{sys.executable}, -c, "{READER}"]}}
- name: printer
  cache: {{disable: true}}
  inputs: [{{name: v, type: str}}]
  run:
    kind: job
    container:
      command: [{sys.executable}, -c, "{PRINTER}", "{{{{ globals.name }}}}", "{{{{ v }}}}"]
"""
PAIR = """\
- {name: a, dagRef: reader}
- {name: down, dagRef: printer, params: {v: {ref: ops.a, value: outputs.leak}}}
"""
NESTED = f"""\
- name: pair
  inputs: [{{name: lr, type: float, value: 0.1, isOptional: true}}]
  run:
    kind: dag
    components:
{indent(COMPONENTS, " " * 6)}    operations:
{indent(PAIR, " " * 6)}"""
OPS = f"""\
{PAIR}- {{name: inner, dagRef: pair}}
- name: sweep
  dagRef: pair
  matrix: {{kind: grid, params: {{lr: {{kind: choice, value: [0.1]}}}}}}
"""
DAG = f"""\
version: 1.1
kind: operation
name: leakdag
component:
  name: leakdag
  run:
    kind: dag
    components:
{indent(COMPONENTS + NESTED, " " * 6)}    operations:
{indent(OPS, " " * 6)}"""


def _server_logs_since(started: datetime) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterTimestamp

    messages: list[str] = []
    with get_client(sync_client=True) as client:
        while True:
            page = client.read_logs(
                log_filter=LogFilter(timestamp=LogFilterTimestamp(after_=started)),
                limit=200,
                offset=len(messages),
            )
            messages += [log.message for log in page]
            if len(page) < 200:
                return messages


@pytest.fixture(scope="module")
def leak_run(
    tmp_path_factory: pytest.TempPathFactory, prefect_server: str
) -> tuple[subprocess.CompletedProcess[str], Path, datetime]:
    """The DAG run once by the CLI in a second process: what it printed, its artifacts root,
    when it started."""
    tmp_path = tmp_path_factory.mktemp("leak")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "creds.env").write_text(f"TOKEN={SECRET}\n")
    (tmp_path / "conns.yaml").write_text(
        "- {name: creds, kind: http, schema: {url: 'http://x'}, secret: {name: creds}}\n"
    )
    (tmp_path / "leakdag.yaml").write_text(DAG)
    artifacts = tmp_path / "artifacts"
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_server,
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(artifacts),
        "POLYAXON_PREFECT_CONNECTIONS": str(tmp_path / "conns.yaml"),
        "POLYAXON_PREFECT_SECRETS_DIR": str(tmp_path / "secrets"),
    }
    started = datetime.now(UTC)
    done = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", "run", "-f", str(tmp_path / "leakdag.yaml")],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    return done, artifacts, started


def test_a_secret_passed_from_op_to_op_is_masked_in_every_op_and_kept_owner_only(
    leak_run: tuple[subprocess.CompletedProcess[str], Path, datetime], prefect_server: str
) -> None:
    done, artifacts, started = leak_run
    terminal = done.stdout + done.stderr
    assert done.returncode == 0, terminal
    # every `down` printed what it got, masked: the top DAG's, the nested DAG's, the trial's
    assert terminal.count("down got ***") == 3, terminal
    assert SECRET not in terminal

    # Prefect's logs of the run and of every run below it (the nested DAG, the sweep, the
    # trial): every line the server received since this run started
    messages = _server_logs_since(started)
    assert sum("down got ***" in m for m in messages) == 3, messages
    assert not [m for m in messages if SECRET in m]

    # `logs` from another process: the run by name, every op's lines
    read = cli_in(prefect_server, "logs", "leakdag")
    assert read.returncode == 0, read.stderr
    assert read.stdout.count("down got ***") == 3, read.stdout
    assert SECRET not in read.stdout + read.stderr

    # nothing on disk shows it, but the records that must hold it: the op cache's outputs
    # (none here: caching is off), each DAG's ops.json (the top one, the nested one, the
    # trial's), 0600; and what `a`'s own code wrote (its outputs.json)
    holding = sorted(p for p in artifacts.rglob("*") if p.is_file() and SECRET in p.read_text())
    ops_files = [p for p in holding if p.name == "ops.json"]
    assert len(ops_files) == 3, holding
    for path in ops_files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert {p.name for p in holding} == {"ops.json", "outputs.json"}, holding
    job_logs = [p for p in artifacts.rglob("job.log") if "down got" in p.read_text()]
    assert len(job_logs) == 3
    for path in job_logs:
        assert path.read_text() == "down got ***\n"


def test_logs_of_an_op_the_run_has_not_names_the_ops_it_has_and_exits_1(
    leak_run: tuple[subprocess.CompletedProcess[str], Path, datetime], prefect_server: str
) -> None:
    assert leak_run[0].returncode == 0
    wrong = cli_in(prefect_server, "logs", "leakdag", "--op", "nosuch")
    assert wrong.returncode == 1
    assert wrong.stdout == ""
    line = wrong.stderr.strip()
    assert line == (
        "error: run leakdag has no op `nosuch`; its ops: a, inner, inner/a, inner/down, sweep, "
        "sweep/trial-0, down, sweep/trial-0/a, sweep/trial-0/down"
    )
    nested = cli_in(prefect_server, "logs", "leakdag", "--op", "inner/down")
    assert nested.returncode == 0, nested.stderr
    assert nested.stdout.splitlines()[0] == "[inner/down] down got ***", nested.stdout
