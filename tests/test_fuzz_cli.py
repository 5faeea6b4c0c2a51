"""The command line under random flags and values: every sub-command, run in-process through
`polyaxon_prefect.cli.main`, ends with exit 0, 1 or 2 (``server status``: 3, stopped) and
never a traceback, and a ``--json`` command prints JSON on stdout whatever happened.

Nothing reachable answers at ``PREFECT_API_URL`` and the Prefect home is a new folder, so no
example starts a server; the sub-commands that would start long work (``server start``,
``dashboard``) are fuzzed at parse level, and ``run`` only gets files that cannot start a run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from polyaxon_prefect import cli

TYPED = str(Path(__file__).resolve().parent.parent / "examples" / "quick-start" / "typed.yaml")
UNREACHABLE = "http://127.0.0.1:9/unreachable/api"
JSON_COMMANDS = ("check", "run", "ls", "get", "invalidate", "artifacts")
STOPPED = 3

ODD = st.sampled_from(
    [
        "", " ", "0", "-1", "65536", "1e309", "nan", "inf", "x" * 300, "é", "a\nb", "a/b",
        "a/b/c", "flow/dep", "%", "{}", "[1]", '{"gpu_count": 1}', "{x", "--json", "-f",
        "postgresql+asyncpg://u@h/db", "mysql://x", "epochs", "lr=0.1", "=", "default",
    ]
)  # fmt: skip
VALUE = st.one_of(ODD, st.text(max_size=16), st.integers(-10, 70000).map(str))
PARAM = st.one_of(st.just("epochs=3"), VALUE)
"""typed.yaml's one required input: with it `check`, `compile` and `deploy` get further."""


def _files(folder: Path) -> list[str]:
    """Files no run can start from: missing, broken, a non-component ref, a required input."""
    (folder / "broken.yaml").write_text("version: 1.1\nkind: [component\n")
    (folder / "shadow").write_text("root:$6$hash:19000:0:99999:7:::\n")
    (folder / "ref.yaml").write_text("version: 1.1\nkind: operation\npathRef: shadow\n")
    return [
        str(folder / "missing.yaml"),
        str(folder / "broken.yaml"),
        str(folder / "ref.yaml"),
        TYPED,
    ]


FLAGS: dict[str, dict[str, st.SearchStrategy[str] | None]] = {
    "check": {"-P": PARAM, "--hub": VALUE, "--json": None},
    "compile": {
        "-P": PARAM,
        "--format": st.one_of(st.sampled_from(["yaml", "json"]), VALUE),
        "--no-plan": None,
        "--target": st.one_of(st.sampled_from(["polyaxonfile", "kubernetes"]), VALUE),
        "--backend": st.one_of(st.sampled_from(["kubeflow", "native"]), VALUE),
        "--namespace": st.one_of(st.just("team-a"), VALUE),
        "--connections": VALUE,
    },
    "upgrade": {},
    "run": {
        "-P": VALUE.filter(lambda v: v.partition("=")[0].strip() != "epochs"),
        "--connections": VALUE,
        "--skip-builds": None,
        "--backend": st.one_of(st.sampled_from(["local", "kubeflow", "native"]), VALUE),
        "--no-cache": None,
        "--resume": None,
        "--storage": VALUE,
        "--deployment": VALUE,
        "--live": None,
        "--json": None,
    },
    "deploy": {
        "-P": PARAM,
        "--pool": st.one_of(st.just("default"), VALUE),
        "--name": VALUE,
        "--force": None,
        "--tag": VALUE,
        "--backend": st.one_of(st.sampled_from(["local", "native"]), VALUE),
        "--job-variables": VALUE,
    },
    "ls": {
        "--status": st.one_of(st.sampled_from(["running", "failed"]), VALUE),
        "--limit": VALUE,
        "--json": None,
        "-q": st.one_of(st.sampled_from(["status:running, metrics.loss:<=0.2", "name:~x"]), VALUE),
        "-s": st.one_of(st.just("-metrics.loss"), VALUE),
        "-io": None,
        "--to-csv": None,
    },
    "get": {"--json": None},
    "invalidate": {"--json": None},
    "artifacts": {"--download": VALUE, "--json": None},
    "server": {"--host": VALUE, "--port": VALUE, "--idle-timeout": VALUE, "--database-url": VALUE},
    "dashboard": {
        "--storage": VALUE,
        "--op": VALUE,
        "--host": VALUE,
        "--port": VALUE,
        "--no-browser": None,
    },
}
PARSE_ONLY = ("dashboard",)
SLOW = ("ls", "get", "deploy", "invalidate", "artifacts")
"""What asks the (unreachable) API: Prefect's client tries a refused connection for 1.5 s."""
COMMANDS = [*(name for name in sorted(FLAGS) if name not in SLOW for _ in range(4)), *SLOW]


@st.composite
def command_lines(draw: st.DrawFn, files: list[str]) -> list[str]:
    """A sub-command, its required arguments (mostly), then random flags in random order."""
    command = draw(st.sampled_from(COMMANDS))
    argv = [command]
    if command == "server":
        argv.append(draw(st.sampled_from(["start", "stop", "status", "restart"])))
    if command in ("get", "invalidate", "artifacts"):
        argv.append(draw(VALUE))
    if command in ("check", "compile", "upgrade", "run", "deploy") and draw(st.integers(0, 9)):
        argv += ["-f", draw(st.sampled_from(files))]
    if command == "deploy" and draw(st.booleans()):
        argv += ["--pool", "default"]
    flags = FLAGS[command]
    for flag in draw(st.lists(st.sampled_from(sorted(flags) or ["--json"]), max_size=4)):
        strategy = flags.get(flag)
        argv.append(flag)
        if strategy is not None and draw(st.integers(0, 9)):  # sometimes the value is missing
            argv.append(draw(strategy))
    if draw(st.integers(0, 19)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(["--bogus", "-x", "--"])))
    return argv


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _files(tmp_path_factory.mktemp("cli-fuzz"))


@pytest.fixture(scope="module", autouse=True)
def nothing_reachable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """An unreachable API and a new Prefect home, restored afterwards (a command points this
    process's Prefect settings at the server it chose)."""
    home = tmp_path_factory.mktemp("prefect-home")
    env = {
        "PREFECT_API_URL": UNREACHABLE,
        "PREFECT_HOME": str(home),
        "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
        "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": "0",
    }
    saved = {key: os.environ.get(key) for key in [*env, "POLYAXON_PREFECT_DEBUG"]}
    os.environ.update(env)
    os.environ.pop("POLYAXON_PREFECT_DEBUG", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if "prefect.context" in sys.modules:
            from prefect.context import refresh_global_settings_context

            refresh_global_settings_context()


def _parsed(argv: list[str]) -> tuple[str | None, str | None]:
    """The sub-command and ``server``'s action as the parser reads ``argv`` (None, None when
    it does not parse)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parsed = cli.parse_args(argv)
        except (SystemExit, Exception):
            return None, None
    return getattr(parsed, "command", None), getattr(parsed, "action", None)


def _outcome(argv: list[str], *, parse_only: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = 0 if parse_only and cli.parse_args(argv) else cli.main(argv)
        except SystemExit as exit_:  # argparse: a usage error (2), or --help / --version (0)
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_CLI_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.process
@FUZZ
@given(data=st.data())
def test_random_command_lines_end_with_an_exit_code_and_no_traceback(
    files: list[str], data: st.DataObject
) -> None:
    argv = data.draw(command_lines(files))
    command, action = _parsed(argv)
    # As the parser reads it (`server -- start` is `server start`): what would start long work
    # (a server that outlives the test, the dashboard) is checked at parse level only.
    parse_only = command in PARSE_ONLY or (command, action) == ("server", "start")
    code, out, err = _outcome(argv, parse_only=parse_only)
    event(f"{argv[0]}: exit {code}")  # --hypothesis-show-statistics: what the examples reached

    allowed = {0, 1, 2, STOPPED} if (command, action) == ("server", "status") else {0, 1, 2}
    assert code in allowed, (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code == 2:
        assert err.strip() and "\n" not in err.strip(), (argv, err)  # one line
    if "--json" in argv and (code == 2 or argv[0] in JSON_COMMANDS) and not parse_only:
        payload = json.loads(out)  # JSON on every outcome, not only success
        if code != 0 and isinstance(payload, dict):
            assert payload.get("error") or payload.get("status") == "failed", (argv, payload)
