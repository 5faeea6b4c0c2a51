"""`copy_files` and `tree_files`: only regular files, never through a link, never outside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from polyaxon_prefect.client.run_files._copy_files import copy_files, tree_files
from polyaxon_prefect.exceptions import PolyaxonPrefectError


def test_links_fifos_and_loops_are_named_not_followed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "outputs" / "deep").mkdir(parents=True)
    (run / "outputs" / "deep" / "a.txt").write_text("a")
    (run / "run.json").write_text("{}")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "private").write_text("p")
    os.symlink(tmp_path / "outside", run / "outputs" / "outlink")
    os.symlink("loop", run / "outputs" / "loop")
    os.mkfifo(run / "outputs" / "fifo")
    files, notes = tree_files(run, skip=("run.json",))
    assert files == [Path("outputs/deep/a.txt")]
    assert notes == [
        "skipped outputs/fifo: a FIFO, not copied",
        "skipped outputs/loop: a link, not copied",
        "skipped outputs/outlink: a link, not copied",
    ]


def test_a_link_in_the_target_is_never_written_through(tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_text("a")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    os.symlink(elsewhere, target / "ops")
    with pytest.raises(PolyaxonPrefectError) as refused:
        copy_files([(source, Path("ops/a.txt"))], target)
    assert str(refused.value) == (
        f"cannot copy the run's files into {target}: a link in it leads outside it "
        f"({target / 'ops'})"
    )
    assert list(elsewhere.iterdir()) == []
    os.symlink(elsewhere / "x", target / "b.txt")  # a file link: replaced, not written through
    copy_files([(source, Path("b.txt"))], target)
    assert not (target / "b.txt").is_symlink() and (target / "b.txt").read_text() == "a"
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(PolyaxonPrefectError, match="a path outside it"):
        copy_files([(source, Path("../escaped.txt"))], target)
    assert not (tmp_path / "escaped.txt").exists()


def test_a_fifo_given_as_a_source_is_one_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PolyaxonPrefectError, match=r"not a regular file \(.*fifo\)"):
        copy_files([(fifo, Path("fifo"))], tmp_path / "target")
