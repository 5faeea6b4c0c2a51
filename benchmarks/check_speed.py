"""Wall time of ``polyaxon-prefect check`` against ``polyaxon check`` (Polyaxon 2.18).

The target: checking a Polyaxonfile takes at most 0.3x the time Polyaxon's own CLI needs.
Polyaxon cannot live in this project's environment (it pins Jinja2 below what Prefect needs), so
it gets its own virtual environment under ``.bench/``, created on first use with pip.

Both CLIs are run as fresh processes, the way a user or a CI step runs them, alternately (ours
first on even rounds, theirs first on odd ones) so that a noisy machine slows both equally.
Both read compiled bytecode, as after a ``pip install`` (which compiles it): the untimed first
run of each writes it under ``.bench/pycache`` (``PYTHONPYCACHEPREFIX``, even where
``PYTHONDONTWRITEBYTECODE`` is set; an editable install is never compiled), so that neither CLI
is timed compiling its sources. The report gives medians and minimums, the ratio ours/theirs of
the medians, and the target line (``met`` or ``MISSED``).

Before timing, the script also asserts the promise that makes ``check`` fast: neither
``import polyaxon_prefect`` nor a full ``check`` run loads ``prefect`` or ``optuna``.

Usage::

    python benchmarks/check_speed.py [--file examples/quick-start/dag.yaml] [--runs 15]

Exit status: 0 done (1 with ``--enforce`` when the target is missed), 1 when either CLI fails
on the file or a heavy module is imported, 2 when a tool is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_FILE = REPO / "examples" / "quick-start" / "dag.yaml"
POLYAXON_VERSION = "2.18.0"
POLYAXON_VENV = REPO / ".bench" / "polyaxon-2.18"
PYCACHE = REPO / ".bench" / "pycache"
TARGET_RATIO = 0.3
HEAVY = ("prefect", "optuna")


def fail(message: str, code: int = 1) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def our_cli() -> Path:
    """The console script installed next to the interpreter running this benchmark."""
    path = Path(sys.executable).parent / "polyaxon-prefect"
    if not path.exists():
        fail(f"{path} not found: install the project first (pip install -e .)", 2)
    return path


def polyaxon_cli(venv: Path, *, install: bool) -> Path:
    """Polyaxon's CLI in its own virtual environment, created on first use."""
    cli = venv / "bin" / "polyaxon"
    if not cli.exists():
        if not install:
            fail(f"{cli} not found (run without --no-install to create it)", 2)
        print(f"creating {venv} with polyaxon=={POLYAXON_VERSION} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [
                *(str(venv / "bin" / "python"), "-m", "pip", "install", "-q"),
                *("--disable-pip-version-check", f"polyaxon=={POLYAXON_VERSION}"),
            ],
            check=True,
        )
    version = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('polyaxon'))",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if version != POLYAXON_VERSION:
        fail(f"{venv} has polyaxon {version or '(none)'}, expected {POLYAXON_VERSION}", 2)
    return cli


def polyaxon_env(home: str) -> dict[str, str]:
    """Keep Polyaxon local and quiet: no server calls, no error reporting, no user config.

    (Polyaxon 2.18 already skips its server version check for ``check`` on a fresh install;
    these variables make sure a user's own ``~/.polyaxon`` cannot turn it back on.)
    """
    env = dict(os.environ)
    env.update(
        POLYAXON_NO_API="true",
        POLYAXON_DISABLE_ERRORS_REPORTING="true",
        POLYAXON_HOME=home,
    )
    return env


def with_bytecode(env: dict[str, str]) -> dict[str, str]:
    """``env`` where Python reads and writes bytecode caches (under `PYCACHE`)."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def assert_light_imports(file: Path) -> tuple[float, float]:
    """Fail if importing the package or running ``check`` loads Prefect or Optuna.

    Returns, in milliseconds, the import time of ``polyaxon_prefect`` and the in-process time
    of ``check`` on ``file`` (its imports included, interpreter start-up excluded).
    """
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import polyaxon_prefect"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported: dict[str, int] = {}
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                imported[name.strip()] = int(cumulative.strip())
    heavy = sorted(name for name in imported if name.split(".")[0] in HEAVY)
    if heavy:
        fail(f"`import polyaxon_prefect` loads {', '.join(heavy)}")

    probe = (
        "import json, sys, time\n"
        "start = time.perf_counter()\n"
        "from polyaxon_prefect.cli import main\n"
        f"code = main(['check', '-f', {str(file)!r}])\n"
        "ms = (time.perf_counter() - start) * 1000\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print('\\n@@' + json.dumps({'code': code, 'heavy': heavy, 'ms': ms}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=file.parent
    )
    marker = [line for line in result.stdout.splitlines() if line.startswith("@@")]
    if result.returncode != 0 or not marker:
        fail(f"in-process check crashed:\n{result.stdout}{result.stderr}")
    report = json.loads(marker[-1][2:])
    if report["heavy"]:
        fail(f"`polyaxon-prefect check` loads {', '.join(report['heavy'])}")
    return imported.get("polyaxon_prefect", 0) / 1000, report["ms"]


def run_once(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    return elapsed, result.returncode, result.stdout + result.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each CLI")
    parser.add_argument("--polyaxon-venv", type=Path, default=POLYAXON_VENV)
    parser.add_argument("--no-install", action="store_true", help="never create the venv")
    parser.add_argument("--enforce", action="store_true", help="exit 1 if the target is missed")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args(argv)

    file = args.file.resolve()
    if not file.exists():
        fail(f"{file} does not exist", 2)
    if args.runs < 1:
        fail("--runs must be at least 1", 2)
    ours_cli = our_cli()
    theirs_cli = polyaxon_cli(args.polyaxon_venv.resolve(), install=not args.no_install)

    import_ms, check_ms = assert_light_imports(file)
    print(
        f"import polyaxon_prefect: {import_ms:.0f} ms; in-process check: {check_ms:.0f} ms; "
        f"neither loads {' or '.join(HEAVY)}"
    )

    # Both run from the file's folder with a relative path, so pathRef resolves the same way.
    ours = [str(ours_cli), "check", "-f", file.name]
    theirs = [str(theirs_cli), "check", "-f", file.name]
    with tempfile.TemporaryDirectory(prefix="polyaxon-home-") as home:
        env_ours, env_theirs = with_bytecode(dict(os.environ)), with_bytecode(polyaxon_env(home))
        # one untimed run each: fills the page cache and bytecode caches, and checks the file
        for name, command, env in (
            ("polyaxon check", theirs, env_theirs),
            ("polyaxon-prefect check", ours, env_ours),
        ):
            _, code, output = run_once(command, file.parent, env)
            if code != 0:
                print(output, file=sys.stderr)
                fail(f"`{name} -f {file.name}` failed with exit code {code}")
        times: dict[str, list[float]] = {"ours": [], "theirs": []}
        for round_ in range(args.runs):
            order = [("ours", ours, env_ours), ("theirs", theirs, env_theirs)]
            for key, command, env in order if round_ % 2 == 0 else order[::-1]:
                elapsed, code, output = run_once(command, file.parent, env)
                if code != 0:
                    print(output, file=sys.stderr)
                    fail(f"{key} run {round_} failed with exit code {code}")
                times[key].append(elapsed)

    med_ours, med_theirs = statistics.median(times["ours"]), statistics.median(times["theirs"])
    ratio = med_ours / med_theirs
    holds = ratio <= TARGET_RATIO
    print(f"file: {file.relative_to(REPO) if file.is_relative_to(REPO) else file}")
    print(f"runs: {args.runs} of each, interleaved")
    print(f"{'':<24}{'median':>10}{'min':>10}")
    print(f"{'polyaxon-prefect check':<24}{med_ours:>9.3f}s{min(times['ours']):>9.3f}s")
    print(
        f"{'polyaxon check ' + POLYAXON_VERSION:<24}{med_theirs:>9.3f}s"
        f"{min(times['theirs']):>9.3f}s"
    )
    print(
        f"ratio ours/theirs (medians): {ratio:.2f}x; min ratio: "
        f"{min(times['ours']) / min(times['theirs']):.2f}x"
    )
    print(f"target check <= {TARGET_RATIO}x polyaxon check: {'met' if holds else 'MISSED'}")
    if args.json:
        print(
            json.dumps(
                {
                    "file": str(file),
                    "runs": args.runs,
                    "import_ms": round(import_ms, 1),
                    "check_in_process_ms": round(check_ms, 1),
                    "ours_s": times["ours"],
                    "theirs_s": times["theirs"],
                    "ratio_median": round(ratio, 4),
                    "target": TARGET_RATIO,
                    "holds": holds,
                }
            )
        )
    return 1 if args.enforce and not holds else 0


if __name__ == "__main__":
    raise SystemExit(main())
