"""What a searched matrix only approximates is a warning of the file: `check` prints it, located
at its line, without importing Optuna (the sweep no longer logs it a second time)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.unit.loading.test_matrix_warnings import BAYES

pytestmark = pytest.mark.process


def test_checking_a_bayes_file_imports_no_optuna() -> None:
    code = (
        "import sys; from polyaxon_prefect.cli import main; "
        f"rc = main(['check', '-f', {str(BAYES)!r}]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'optuna'))); "
        "sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "warning: `utilityFunction` asks for" in done.stderr and "nu: 1.9" in done.stderr
