"""Trigger rules, checked against tables written out by hand (not computed by the code)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from polyaxon_prefect.dag._trigger_rules import truth_table_markdown
from tests.unit.dag.test_triggers import ROOT

pytestmark = pytest.mark.process


def test_module_prints_the_truth_table() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.dag._trigger_rules"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout == truth_table_markdown()
    assert "| `one_succeeded` | `run` | `upstream_failed` |" in result.stdout
