"""The console script's `run` freezes the heap it finds once (a DAG's full collections then scan
only what runs made); a program that calls `run()` keeps its collector as it set it. Each case
in a fresh interpreter: a frozen heap would stay frozen in the test worker."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from polyaxon_prefect.prefect import _settings
{own}
_settings.freeze_heap_once()
first = gc.get_freeze_count()
_settings.freeze_heap_once()
print(first, gc.get_freeze_count() == first)
"""


def _freeze_count(own: str) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(own=own)], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), out[1]


def test_a_library_callers_heap_is_never_frozen() -> None:
    assert _freeze_count("") == (0, "True")


def test_the_clis_own_process_freezes_its_heap_once() -> None:
    frozen, once = _freeze_count("_settings.own_the_process()")
    assert frozen > 10_000 and once == "True"
