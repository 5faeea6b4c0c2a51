"""Every flag of every sub-command checks its value at parse time: exit 2 and one line that
names the argument and what it takes (under ``--json`` also ``{"error": ...}`` on stdout),
never a traceback from deep inside Prefect. Every ``--json`` command prints JSON on stdout
whatever happens; ``deploy`` refuses a server that would vanish with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main

TYPED = str(Path(__file__).resolve().parent.parent / "examples" / "quick-start" / "typed.yaml")
UNREACHABLE = "http://127.0.0.1:9/unreachable/api"

BAD = [
    (["deploy", "-f", TYPED, "--pool", "p", "--name", "a/b"], "--name", "but / % & < >"),
    (["deploy", "-f", TYPED, "--pool", "a%b"], "--pool", "holds %"),
    (["deploy", "-f", TYPED, "--pool", "p", "--name", ""], "--name", "must not be empty"),
    (["deploy", "-f", TYPED, "--pool", "p", "--tag", "a\nb"], "--tag", "control characters"),
    (["deploy", "-f", TYPED, "--pool", "p", "--job-variables", "{x"], "--job-variables", "JSON"),
    (["deploy", "-f", TYPED, "--pool", "p", "--job-variables", "[1]"], "--job-variables", "{...}"),
    (["deploy", "-f", TYPED, "--pool", "p", "--backend", "k8s"], "--backend", "'native'"),
    (["run", "-f", TYPED, "--deployment", "nope"], "--deployment", "FLOW/DEPLOYMENT"),
    (["run", "-f", TYPED, "--deployment", "a/b/c"], "--deployment", "holds /"),
    (["run", "-f", TYPED, "--backend", "slurm", "--json"], "--backend", "'kubeflow'"),
    (["compile", "-f", TYPED, "--namespace", "Team_A"], "--namespace", "lowercase a-z"),
    (["compile", "-f", TYPED, "--format", "toml"], "--format", "'yaml', 'json'"),
    (["server", "start", "--port", "0"], "--port", "from 1 to 65535"),
    (["server", "start", "--port", "http"], "--port", "whole number"),
    (["server", "start", "--idle-timeout", "-1"], "--idle-timeout", "0 or more seconds"),
    (["server", "start", "--idle-timeout", "inf"], "--idle-timeout", "0 or more seconds"),
    (["server", "start", "--database-url", "mysql://x"], "--database-url", "postgresql+asyncpg"),
    (["server", "start", "--host", " "], "--host", "must not be empty"),
    (["server", "restart"], "action", "'start', 'stop', 'status'"),
    (["dashboard", "--port", "99999"], "--port", "from 1 to 65535"),
    (["ls", "--limit", "0", "--json"], "--limit", "from 1 to 1000"),
    (["ls", "--status", "done", "--json"], "--status", "'succeeded'"),
    (["get", "", "--json"], "run", "must not be empty"),
    (["check", "--json"], "-f/--file", "required"),
]


@pytest.mark.parametrize(("argv", "argument", "rule"), BAD)
def test_a_bad_flag_is_one_usage_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], argument: str, rule: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1, err
    assert argument in err and rule in err and "--help" in err, err
    if "--json" in argv:
        assert argument in json.loads(out)["error"]
    else:
        assert out == ""


def _cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    home = {"PREFECT_HOME": str(tmp_path / "home"), "PREFECT_PROFILES_PATH": str(tmp_path / "p")}
    return subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", *args],
        capture_output=True,
        text=True,
        env={**base, **home, **env},
        timeout=120,
        check=False,
    )


@pytest.mark.process
@pytest.mark.parametrize("argv", [["ls", "--json"], ["get", "some-run", "--json"]])
def test_json_commands_print_json_when_no_server_answers(tmp_path: Path, argv: list[str]) -> None:
    done = _cli(tmp_path, *argv, PREFECT_API_URL=UNREACHABLE)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    error = json.loads(done.stdout)["error"]
    assert UNREACHABLE in error and "polyaxon-prefect server start" in error
    assert done.stderr.strip() == f"error: {error}"


@pytest.mark.process
def test_deploy_refuses_a_temporary_server_before_starting_one(tmp_path: Path) -> None:
    done = _cli(
        tmp_path,
        *("deploy", "-f", TYPED, "--pool", "default"),
        POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT="0",
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "needs a Prefect server that outlives it" in done.stderr
    assert "polyaxon-prefect server start" in done.stderr and "PREFECT_API_URL" in done.stderr
    assert "starting" not in done.stderr and not (tmp_path / "home" / "prefect.db").exists()


@pytest.mark.parametrize(
    ("argv", "sort"),
    [
        (["ls", "--sort", "-metrics.loss"], "-metrics.loss"),
        (["ls", "-s", "-metrics.loss,name"], "-metrics.loss,name"),
        (["ls", "-q", "kind:job", "-s", "-duration", "--json"], "-duration"),
        (["ls", "--sort=-started_at"], "-started_at"),
        (["ls", "-s", "name"], "name"),
    ],
)
def test_a_descending_sort_is_typed_as_polyaxon_users_type_it(argv: list[str], sort: str) -> None:
    """``--sort -metrics.loss``: argparse alone reads the value as an unknown option."""
    from polyaxon_prefect.cli import parse_args
    from polyaxon_prefect.query import parse_sort

    args = parse_args(argv)
    assert (args.command, args.sort) == ("ls", parse_sort(sort))
    assert args.sort[0].descending == sort.startswith("-")
    assert args.json == ("--json" in argv), "the flag after it is still a flag"
