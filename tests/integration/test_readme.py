"""The command blocks of the README and the docs pages, run as written.

Every fenced ```` ```bash ```` block of README.md and of the pages under docs/ (the user guide,
in the reading order of `tests/doc_pages.py`: README first, then mkdocs.yml's nav) is preceded
by an HTML comment that says what it is: ``<!-- journey: NAME -->`` (a user journey: every
line runs, verbatim, and must work) or ``<!-- reference -->`` (a synopsis with ``[optional]``
arguments, or a cluster, not run). A block with neither fails
`test_every_bash_block_is_a_journey_or_a_reference`, so no new block escapes; a journey with no
checks here fails too. A journey's name is unique across the pages.

A journey runs on a fresh Prefect home (a temporary directory holding a copy of a database
migrated once per test session), the local server on a free port
(``POLYAXON_PREFECT_SERVER_PORT``) with a short idle timeout, the package's ``.venv/bin`` first
on ``PATH`` and the repository as the working directory, as a user who followed
"Set-up" would. A line that runs until stopped (``prefect worker start``) is started in the
background and stopped (SIGINT, then SIGKILL) when the block is done. A ``make TARGET`` line
runs the target's recipe from the Makefile (its ``setup`` prerequisite is the ``.venv`` these
tests run from); ``make test`` is not run (it runs this suite).

Each block runs once per home it is checked on: `test_readme_walk.py` runs every journey in
reading order on one fresh home and asserts each one's checks as it goes (the first journey is
on a fresh home there, the next ones after what `make example` left, as a reader has them);
the journeys of `ALONE`, whose checks hold on a fresh home only, also run here, each on its
own. A check compares with what the home held before its block (`Seen`), so it asserts the
same on a fresh home and after the blocks read before it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import seed_prefect_home
from tests.doc_pages import name as page_name
from tests.doc_pages import pages
from tests.integration.conftest import free_port, stop

REPO = Path(__file__).parents[2]
MAKEFILE = REPO / "Makefile"
VENV_BIN = REPO / ".venv" / "bin"

IDLE_TIMEOUT = 120
"""Seconds: a server a failed test leaves behind stops itself soon after."""
COMMAND_TIMEOUT = 300
BACKGROUND = ("prefect worker start",)
"""Lines that run until stopped: started in the background, stopped at the end of the block."""
NOT_RUN_MAKE_TARGETS = {"test": "runs this very test suite"}

_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!--\s*(journey:\s*(?P<journey>[\w-]+)|(?P<reference>reference))\s*-->")


@dataclass(frozen=True)
class Block:
    page: str
    """The page's path from the repository root (``README.md``, ``docs/guide/runs.md``)."""
    line: int
    marker: str | None
    """The journey's name, ``"reference"``, or None when unmarked."""
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = _MARKER.fullmatch(before)
        kind = None
        if marker is not None:
            kind = marker.group("journey") or "reference"
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(page_name(page), line, kind, match.group(1)))
    return blocks


def doc_blocks() -> list[Block]:
    """Every bash block of the README and the docs pages, in reading order."""
    return [block for page in pages() for block in page_blocks(page)]


def journeys() -> dict[str, Block]:
    """The journeys by name, in reading order."""
    found: dict[str, Block] = {}
    for block in doc_blocks():
        if block.marker not in (None, "reference"):
            assert block.marker not in found, (
                f"two journeys named {block.marker!r}: {found[block.marker].where}, {block.where}"
            )
            found[block.marker] = block
    return found


def make_recipe(target: str) -> list[str]:
    """The commands of ``make TARGET``, its variables expanded, as make would run them."""
    text = MAKEFILE.read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+)\s*[:?]?=\s*(.*?)\s*$", text, re.MULTILINE))
    recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe is not None, f"no recipe for `make {target}` in the Makefile"

    def expand(line: str) -> str:
        while (variable := re.search(r"\$\((\w+)\)", line)) is not None:
            line = line.replace(variable.group(0), variables[variable.group(1)])
        return line

    return [expand(line.strip().lstrip("@-")) for line in recipe.group(1).splitlines()]


def commands(block: Block) -> list[str]:
    """The block's command lines (continuations joined, ``make`` lines as their recipes)."""
    lines: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "make":
            for target in words[1:]:
                if target not in NOT_RUN_MAKE_TARGETS:
                    lines.extend(make_recipe(target))
            continue
        lines.append(line)
    return lines


@dataclass(frozen=True)
class Seen:
    """What the home held before a block: its runs (name, kind, status) and its deployments
    (``FLOW/NAME`` to entrypoint). Nothing on a fresh home (read without starting a server:
    a server that does not answer holds nothing yet)."""

    runs: tuple[tuple[str, str, str], ...] = ()
    deployments: tuple[tuple[str, str], ...] = ()


@dataclass
class Journey:
    env: dict[str, str]
    port: int
    folder: Path
    results: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    background: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    before: Seen = field(default_factory=Seen)
    """What the home held before the block being checked (set by `walk_block`)."""

    def walk_block(self, block: Block, *, checked: bool = True) -> None:
        """Run ``block`` after what ran before on this home: its results replace theirs (a
        check reads its own block's commands) and `before` is what they left (read when the
        block is ``checked``)."""
        self.before = seen(self) if checked else Seen()
        self.results.clear()
        self.run_block(block)

    def run_block(self, block: Block) -> None:
        for command in commands(block):
            if any(command.startswith(prefix) for prefix in BACKGROUND):
                log = open(self.folder / f"background-{len(self.background)}.log", "wb")  # noqa: SIM115
                self.background[command] = subprocess.Popen(
                    ["bash", "-c", f"exec {command}"],
                    cwd=REPO,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                log.close()
                continue
            completed = self.cli(command)
            self.results[command] = completed
            assert completed.returncode == 0, _failure(block, command, completed)

    def cli(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )

    def output(self, prefix: str) -> subprocess.CompletedProcess[str]:
        """The result of the block's one command that starts with ``prefix``."""
        found = [result for command, result in self.results.items() if command.startswith(prefix)]
        assert len(found) == 1, f"one command starting with {prefix!r}, got {list(self.results)}"
        return found[0]


def _failure(block: Block, command: str, completed: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{block.where} `{command}` exited {completed.returncode}\n"
        f"stdout:\n{completed.stdout[-3000:]}\nstderr:\n{completed.stderr[-3000:]}"
    )


@pytest.fixture
def journey(tmp_path: Path, prefect_database_template: Path) -> Iterator[Journey]:
    if not (VENV_BIN / "polyaxon-prefect").exists():
        pytest.fail("the README's commands need .venv at the repository root (`make setup-test`)")
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PREFECT_", "POLYAXON_PREFECT_"))
    }
    port = free_port()
    # a new home whose database is already built (a copy of the session's migrated one): the
    # journey's commands meet a first start all the same, without its migration
    home = seed_prefect_home(tmp_path / "prefect-home", prefect_database_template)
    env = {
        **base,
        "PATH": f"{VENV_BIN}{os.pathsep}{base.get('PATH', '')}",
        "PREFECT_HOME": str(home),
        "POLYAXON_PREFECT_ARTIFACTS_ROOT": str(tmp_path / "artifacts"),
        "POLYAXON_PREFECT_SERVER_PORT": str(port),
        "POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT": str(IDLE_TIMEOUT),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_WORKER_PREFETCH_SECONDS": "1",
    }
    state = Journey(env=env, port=port, folder=tmp_path)
    try:
        yield state
    finally:
        for process in state.background.values():
            stop(process)
        state.cli(".venv/bin/polyaxon-prefect server stop")


def _starting_line(port: int) -> str:
    return (
        f"starting the local Prefect server at http://127.0.0.1:{port} (once; it stops after "
        f"{IDLE_TIMEOUT // 60} minutes without use; UI at that address)"
    )


def _runs(journey: Journey) -> list[tuple[str, str, str]]:
    listed = journey.cli(".venv/bin/polyaxon-prefect ls --json --limit 1000")
    assert listed.returncode == 0, listed.stderr
    return [(run["name"], run["kind"], run["status"]) for run in json.loads(listed.stdout)]


def check_quick_start(journey: Journey) -> None:
    check = journey.output(".venv/bin/polyaxon-prefect check")
    assert "examples/quick-start/dag.yaml: valid (dag `automated-process`)" in check.stdout
    run = journey.output(".venv/bin/polyaxon-prefect run")
    assert run.stderr.splitlines()[0] == _starting_line(journey.port)
    assert run.stdout.startswith("status: succeeded\nop: automated-process (run "), run.stdout
    ops = re.findall(r"^  (\w+)\s+(\w+)", run.stdout, re.MULTILINE)
    assert ops == [("experiment", "succeeded"), ("tune", "succeeded"), ("best_model", "succeeded")]
    assert re.search(r"^  experiment\s+succeeded\s+loss=[\d.]+ accuracy=[\d.]+$", run.stdout, re.M)
    # The run left the shared server running, with its UI, for the next command.
    status = journey.cli(".venv/bin/polyaxon-prefect server status")
    assert status.returncode == 0 and f"http://127.0.0.1:{journey.port}" in status.stdout
    assert _runs(journey)[0] == ("automated-process", "dag", "succeeded")


def check_local_server(journey: Journey) -> None:
    started = journey.output(".venv/bin/polyaxon-prefect server start")
    assert f"Prefect server started at http://127.0.0.1:{journey.port}" in started.stdout
    assert (
        f"for `prefect` commands: prefect config set "
        f"PREFECT_API_URL=http://127.0.0.1:{journey.port}/api" in started.stdout
    )
    run = journey.output(".venv/bin/polyaxon-prefect run")
    assert run.stderr.splitlines()[0] == (
        f"using the local Prefect server at http://127.0.0.1:{journey.port} "
        "(`polyaxon-prefect server stop` to stop it)"
    )
    assert run.stdout.startswith("status: succeeded\n"), run.stdout
    table = journey.output(".venv/bin/polyaxon-prefect ls").stdout.splitlines()
    assert table[1].split()[:3] == ["typed-experiment", "job", "succeeded"], table
    got = journey.output(".venv/bin/polyaxon-prefect get").stdout
    assert "name: typed-experiment\n" in got and "status: succeeded\n" in got, got
    assert "epochs" in got and "loss" in got, got
    assert "running at" in journey.output(".venv/bin/polyaxon-prefect server status").stdout
    assert (
        "stopped the Prefect server"
        in journey.output(".venv/bin/polyaxon-prefect server stop").stdout
    )
    status = journey.cli(".venv/bin/polyaxon-prefect server status")
    assert (status.returncode, status.stdout.strip()) == (3, "stopped")


def check_deployment(journey: Journey) -> None:
    started = journey.output(".venv/bin/polyaxon-prefect server start --set-profile")
    assert f"PREFECT_API_URL=http://127.0.0.1:{journey.port}/api" in started.stdout
    deployed = journey.output(".venv/bin/polyaxon-prefect deploy")
    assert "deployment automated-process/qs" in deployed.stdout, deployed.stdout
    watched = journey.output("prefect deployment run")
    assert "Flow run finished successfully in 'Completed'" in watched.stdout, watched.stdout
    [worker] = journey.background.values()
    assert worker.poll() is None, "the worker ran until stopped"
    # The worker ran the deployment on the same server the CLI reads: a new succeeded run.
    added = Counter(_runs(journey)) - Counter(journey.before.runs)
    assert added[("automated-process", "dag", "succeeded")] >= 1, added


def _api(journey: Journey, path: str) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{journey.port}/api/{path}",
        data=b"{}",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.load(response))


def _deployments(journey: Journey) -> dict[str, str]:
    """The server's deployments: ``FLOW/NAME`` to entrypoint."""
    flows = {flow["id"]: flow["name"] for flow in _api(journey, "flows/filter")}
    return {
        f"{flows[deployment['flow_id']]}/{deployment['name']}": deployment["entrypoint"]
        for deployment in _api(journey, "deployments/filter")
    }


def seen(journey: Journey) -> Seen:
    """What the home holds now (`Seen`); read only from a server that answers, so a fresh
    home is left as it is."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{journey.port}/api/health", timeout=30):
            pass
    except OSError:
        return Seen()
    return Seen(tuple(_runs(journey)), tuple(_deployments(journey).items()))


def check_prefect_yaml(journey: Journey) -> None:
    # the block's deployments, exactly: all of them on a fresh home
    added = dict(_deployments(journey).items() - set(journey.before.deployments))
    assert added == {
        "typed-experiment/quick-start": "flows/quick_start.py:flow",
        "polyaxon-trial/sweep-trial": "flows/trial.py:flow",
        "polyaxonfile/quick-start-dag": "flows/polyaxonfile.py:flow",
    }


def check_daily_verbs(journey: Journey) -> None:
    """What each verb printed is true of the run: its lines, its states in order, the query
    keeping it with its params and outputs, its files, and a restart of the recorded
    operation with one param changed."""
    run = journey.output(".venv/bin/polyaxon-prefect run").stdout
    assert "status: succeeded" in run and "tags: examples, quick-start, nightly" in run
    first_dir = run.split("run directory: ", 1)[1].splitlines()[0]

    logs = journey.output(".venv/bin/polyaxon-prefect logs").stdout.splitlines()
    assert len(logs) == 3 and any("epoch 3/3: loss=" in line for line in logs), logs

    states = [
        line.split()[-1]
        for line in journey.output(".venv/bin/polyaxon-prefect statuses").stdout.splitlines()
    ]
    assert states[-1] == "succeeded" and "running" in states, states

    table = journey.output(".venv/bin/polyaxon-prefect ls").stdout.splitlines()
    assert table[0].split()[:6] == ["name", "kind", "status", "started", "duration", "id"]
    assert "in.epochs" in table[0] and "out.loss" in table[0]
    [row] = table[1:]  # the restart came after: one run had the tag then
    cells = row.split()
    assert cells[:3] == ["nightly", "job", "succeeded"] and cells[5].endswith("s"), cells
    assert re.fullmatch(r"\d+\.\ds", cells[5]), f"a finished run's duration: {cells[5]}"

    files = journey.output(".venv/bin/polyaxon-prefect artifacts").stdout
    for name in ("logs/job.log", "outputs/outputs.json", "polyaxonfile.yaml", "run.json"):
        assert name in files, files
    assert first_dir in files

    restarted = journey.output(".venv/bin/polyaxon-prefect restart").stdout
    assert "status: succeeded" in restarted
    second_dir = restarted.split("run directory: ", 1)[1].splitlines()[0]
    assert second_dir != first_dir
    record = json.loads((Path(second_dir) / "run.json").read_text(encoding="utf-8"))
    assert record["params"]["epochs"] in (2, "2"), record["params"]
    listed = [r for r in _runs(journey) if r[0] == "nightly"]
    assert listed == [("nightly", "job", "succeeded")] * 2  # no run of that name before it
    latest = re.search(r"\(run ([0-9a-f]{32})\)", restarted)
    assert latest is not None, restarted
    got = journey.output(".venv/bin/polyaxon-prefect get")  # a name two runs have: the latest
    assert f"uuid: {latest.group(1)}\n" in got.stdout, got.stdout
    assert (
        f"note: 1 other run is named nightly; the latest is {latest.group(1)} "
        "(ls -q name:nightly to see them)\n"
    ) in got.stderr


CHECKS: dict[str, Callable[[Journey], None]] = {
    "quick-start": check_quick_start,
    "local-server": check_local_server,
    "deployment": check_deployment,
    "prefect-yaml": check_prefect_yaml,
    "daily-verbs": check_daily_verbs,
}
ALONE = {
    "local-server": "`server start` starts the server and `run` finds it: the walk's is running",
}
"""Journeys whose checks hold on a fresh home only, and why: the walk runs their block, and
`test_readme_journey` runs it again alone on a fresh home and checks it."""


def test_every_bash_block_is_a_journey_or_a_reference() -> None:
    unmarked = [block.where for block in doc_blocks() if block.marker is None]
    assert not unmarked, (
        f"{unmarked}: put `<!-- journey: NAME -->` (run and checked by this "
        "file) or `<!-- reference -->` on the line before each ```bash block"
    )
    assert set(journeys()) == set(CHECKS), "each journey of the docs needs its checks here"
    assert set(ALONE) <= set(CHECKS), "checked alone or in the walk"


def test_make_lines_run_the_makefile_recipe() -> None:
    quick_start = journeys()["quick-start"]
    assert commands(quick_start) == [
        ".venv/bin/polyaxon-prefect check -f examples/quick-start/dag.yaml",
        ".venv/bin/polyaxon-prefect run -f examples/quick-start/dag.yaml",
    ]


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.server
@pytest.mark.parametrize("name", sorted(ALONE))
def test_readme_journey(name: str, journey: Journey) -> None:
    """A journey alone on a fresh home (the others are checked in the walk)."""
    assert name in CHECKS, f"journey {name!r} has no checks in this file"
    journey.run_block(journeys()[name])
    CHECKS[name](journey)
