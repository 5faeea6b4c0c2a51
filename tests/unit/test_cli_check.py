"""``check``'s speed helpers leave the process as they found it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from polyaxon_prefect.cli import _gc_paused, main


def test_gc_is_paused_inside_and_its_state_restored_after() -> None:
    assert gc.isenabled()
    with _gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), _gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_check_leaves_gc_enabled(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("version: 1.1\nkind: component\nrun: {kind: job, container: {image: x}}\n")
    assert main(["check", "-f", str(path)]) == 0
    assert gc.isenabled()
    path.write_text("version: 1.1\nkind: component\nrun: {kind: job, containr: {image: x}}\n")
    assert main(["check", "-f", str(path)]) == 1
    assert gc.isenabled()
