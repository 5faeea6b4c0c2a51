"""`run_process` against real child processes (Python children, so the tests are portable)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonPrefectError
from polyaxon_prefect.runtime import (
    CommandNotFoundError,
    ProcessStartError,
    mask_secrets,
    run_process,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

PY = sys.executable


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", **extra}


def test_unknown_command_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFoundError, match=r"`no-such-tool-xyz` was not found.*PATH"):
        run_process(["no-such-tool-xyz", "--help"], env=_env(), cwd=tmp_path, timeout=5)
    assert issubclass(CommandNotFoundError, PolyaxonPrefectError)


def test_missing_cwd_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError, match="does not exist"):
        run_process([PY, "-c", "pass"], env=_env(), cwd=tmp_path / "nope")


def test_mask_secrets_ignores_too_short_values() -> None:
    assert mask_secrets("pw=abc x=ab", ["abc", "ab", ""]) == "pw=*** x=ab"
