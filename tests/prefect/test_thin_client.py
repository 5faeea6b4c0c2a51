"""The thin client (`polyaxon_prefect.client`) answers plain ``ls``, ``get`` and ``statuses``
exactly as the flow layer does, without importing Prefect, and the REST routes and fields it
reads are still in the server's ``/openapi.json``.

Each command line runs both ways on the same server: in a second process, where the thin
client answers (and the process is checked to have imported no Prefect, Optuna, httpx or
pydantic), and in this process, where Prefect's settings are loaded, so the flow layer does.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.client._adapter import missing
from polyaxon_prefect.testing.recorded_runs import RecordedRun, record_runs, sample_runs

_THIN = (
    "import sys\n"
    "from polyaxon_prefect.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = ('prefect', 'optuna', 'httpx', 'pydantic')\n"
    "loaded = sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
    "print('LOADED', *loaded, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def recorded(prefect_server: str) -> list[RecordedRun]:
    batch = f"thin-{uuid.uuid4().hex[:8]}"
    runs = [dataclasses.replace(r, name=f"{batch}-{r.name}", tags=(batch,)) for r in sample_runs(4)]
    record_runs(prefect_server, runs)
    return runs


def _thin(api: str, argv: list[str], home: str) -> subprocess.CompletedProcess[str]:
    import os

    # A Prefect home of its own: earlier tests of this worker may have left a dead session's
    # journal in the shared one, and the thin way then rightly leaves the command to Prefect.
    return subprocess.run(
        [sys.executable, "-c", _THIN, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PREFECT_API_URL": api, "PREFECT_HOME": home},
        timeout=120,
        check=False,
    )


def _ours(text: str, names: list[str], as_json: bool) -> object:
    """What ``ls`` said of our runs only (the shared server holds other tests' runs too)."""
    if as_json:
        return [row for row in json.loads(text) if row["name"] in names]
    return [line for line in text.splitlines() if any(line.startswith(n) for n in names)]


def test_ls_get_statuses_print_the_same_both_ways_and_the_thin_way_imports_no_prefect(
    prefect_server: str,
    recorded: list[RecordedRun],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    home = str(tmp_path / "prefect-home")
    names = [r.name for r in recorded]
    failed = next(r.name for r in recorded if r.status == "failed")
    lines = [
        ["ls", "--limit", "5"],
        ["ls", "--json", "--limit", "8"],
        ["ls", "--status", "failed", "--json"],
        ["get", failed],
        ["get", names[1], "--json"],
        ["get", f"no-such-run-{uuid.uuid4().hex}", "--json"],
        ["statuses", failed],
        ["statuses", names[1], "--json"],
        ["statuses", f"no-such-run-{uuid.uuid4().hex}", "--json"],
    ]
    for argv in lines:
        thin = _thin(prefect_server, argv, home)
        assert thin.stderr.splitlines()[-1] == "LOADED", (argv, thin.stderr)
        code = main(argv)
        flow = capsys.readouterr()
        assert thin.returncode == code, (argv, thin.stderr, flow.err)
        if argv[0] == "ls":
            as_json = "--json" in argv
            ours = _ours(thin.stdout, names, as_json)
            assert ours and ours == _ours(flow.out, names, as_json), argv
        else:
            assert thin.stdout == flow.out, argv
            assert thin.stderr.splitlines()[:-1] == flow.err.splitlines(), argv
    shown = json.loads(_thin(prefect_server, ["get", failed, "--json"], home).stdout)
    assert shown["status"] == "failed" and shown["kind"] == "job"
    assert shown["metrics"] == next(r.metrics for r in recorded if r.name == failed)


def test_the_api_has_every_route_and_field_the_thin_client_reads(prefect_server: str) -> None:
    with urllib.request.urlopen(f"{prefect_server}/openapi.json", timeout=30) as answer:
        openapi = json.load(answer)
    problems = missing(openapi)
    assert not problems, "Prefect's REST API moved: " + "; ".join(problems)
    assert missing({"paths": {}})[0] == "route POST /flow_runs/filter is gone"
