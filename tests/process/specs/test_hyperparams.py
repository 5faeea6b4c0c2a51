"""The 16 hyper-parameter kinds: every value syntax, the rules, and numpy-equal enumeration."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.process


# -- flags and IO ------------------------------------------------------------------------------


def test_module_does_not_import_numpy() -> None:
    code = (
        "import sys; import polyaxon_prefect.specs.matrix._hyperparams, "
        "polyaxon_prefect.specs.matrix._matrix; "
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
