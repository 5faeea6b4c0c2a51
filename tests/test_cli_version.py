"""``polyaxon-prefect --version``: the package's version, exit 0, without importing Prefect."""

from __future__ import annotations

import subprocess
import sys

import pytest

import polyaxon_prefect

pytestmark = pytest.mark.process


def test_version_prints_the_package_version_without_importing_prefect() -> None:
    code = (
        "import sys\n"
        "from polyaxon_prefect.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit as exit:\n"
        "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'optuna'))\n"
        "    print(heavy, file=sys.stderr)\n"
        "    sys.exit(exit.code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"polyaxon-prefect {polyaxon_prefect.__version__}\n"
    assert done.stderr.strip() == "[]"


def test_the_console_module_answers_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    version = polyaxon_prefect.__version__
    assert (done.returncode, done.stdout.split()) == (0, ["polyaxon-prefect", version])
