"""Shared pytest configuration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A command with no PREFECT_API_URL starts the shared background server on port 4200 and leaves
# it running (README, "One server"). Tests get a temporary server per command instead, so no
# test leaves a server behind or meets another test's; the tests of the background server set
# their own port and idle timeout.
os.environ.setdefault("POLYAXON_PREFECT_SERVER_IDLE_TIMEOUT", "0")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/expected/*.json from the current compiler output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
