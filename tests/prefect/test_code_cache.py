"""The op cache sees the code: a DAG op's cache key holds the hash of its working folder's files
(and the interpreter), so an edit runs the op again, the same code in another folder is a hit,
and a folder without the code is none. A restart reruns the ops whose code changed and reuses
the rest (each op in its own working folder here: ops sharing a folder share their code);
``restart --force OP`` reruns OP anyway. Real processes on the session's server; the ops count
their starts in a folder outside their code."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from polyaxon_prefect.prefect import run
from tests.prefect.conftest import cli_json_in

PY = sys.executable


def _script(marks: Path, name: str, value: float) -> str:
    return (
        "from polyaxon_prefect import tracking\n"
        f"open({str(marks / name)!r}, 'a').write('x')\n"
        f"tracking.log_outputs(loss={value})\n"
    )


def _dag(name: str, ops: list[str], chain: bool = False, folders: bool = False) -> str:
    """A DAG of ops running ``<op>.py``; ``folders``: each op in its own working folder
    (``<op>/``), so each op's code is its folder's alone."""
    entries = []
    for index, op in enumerate(ops):
        after = f"    dependencies: [{ops[index - 1]}]\n" if chain and index else ""
        where = f", workingDir: {op}" if folders else ""
        entries.append(
            f"  - name: {op}\n{after}"
            f"    component:\n"
            f"      outputs: [{{name: loss, type: float}}]\n"
            f'      run: {{kind: job, container: {{command: ["{PY}", {op}.py]{where}}}}}\n'
        )
    return f"version: 1.1\nkind: component\nname: {name}\nrun:\n  kind: dag\n  operations:\n" + (
        "".join(entries)
    )


def _starts(marks: Path, op: str) -> int:
    path = marks / op
    return len(path.read_text()) if path.exists() else 0


@pytest.mark.server
def test_an_edit_runs_the_op_again_the_same_code_elsewhere_is_a_hit_no_code_is_none(
    tmp_path: Path,
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text(_script(marks, "train", 1.0))
    (code / "dag.yaml").write_text(_dag("code-cache", ["train"]))

    first = run(code / "dag.yaml")
    assert first.ops is not None and first.ops["train"]["outputs"] == {"loss": 1.0}

    again = run(code / "dag.yaml")  # nothing changed: a hit that says why
    assert again.ops is not None and _starts(marks, "train") == 1
    message = again.ops["train"]["message"]
    uuid = first.ops["train"]["uuid"]
    assert message.startswith(f"cache hit: reused the outputs of run {uuid}"), message
    assert "(same op, params and code " in message and f" as run {uuid}" in message

    (code / "train.py").write_text(_script(marks, "train", 0.5))
    edited = run(code / "dag.yaml")
    assert edited.ops is not None and edited.ops["train"]["outputs"] == {"loss": 0.5}
    assert "cache hit" not in edited.ops["train"]["message"]
    assert _starts(marks, "train") == 2

    elsewhere = tmp_path / "copy"
    shutil.copytree(code, elsewhere)
    (elsewhere / "__pycache__").mkdir()  # noise the hash skips
    (elsewhere / "__pycache__" / "train.cpython.pyc").write_bytes(b"\0")
    copied = run(elsewhere / "dag.yaml")
    assert copied.ops is not None and copied.ops["train"]["outputs"] == {"loss": 0.5}
    assert copied.ops["train"]["message"].startswith(
        f"cache hit: reused the outputs of run {edited.ops['train']['uuid']}"
    )
    assert _starts(marks, "train") == 2

    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(code / "dag.yaml", empty / "dag.yaml")  # the Polyaxonfile alone: no code
    nothing = run(empty / "dag.yaml")
    assert nothing.ops is not None
    assert nothing.ops["train"]["status"] == "failed", nothing.ops["train"]
    assert "cache hit" not in nothing.ops["train"]["message"]


@pytest.mark.server
def test_restart_reruns_the_edited_op_and_force_reruns_an_unchanged_one(
    tmp_path: Path, prefect_server: str
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    code = tmp_path / "code"
    code.mkdir()
    for op in ("prep", "train"):
        (code / op).mkdir()
        (code / op / f"{op}.py").write_text(_script(marks, op, 1.0))
    (code / "dag.yaml").write_text(
        _dag("code-restart", ["prep", "train"], chain=True, folders=True)
    )
    first = run(code / "dag.yaml")
    assert first.status == "succeeded" and first.uuid is not None

    (code / "train" / "train.py").write_text(_script(marks, "train", 0.5))
    status, again, err = cli_json_in(prefect_server, tmp_path, "restart", first.uuid)
    assert status == 0, err
    assert again["ops"]["train"]["outputs"] == {"loss": 0.5}
    assert "cache hit" in again["ops"]["prep"]["message"]  # unchanged: served
    assert (_starts(marks, "prep"), _starts(marks, "train")) == (1, 2)

    status, forced, err = cli_json_in(
        prefect_server, tmp_path, "restart", first.uuid, "--force", "prep"
    )
    assert status == 0, err
    assert "forced to run again: `prep`" in err
    assert "cache hit" not in forced["ops"]["prep"]["message"]
    # prep's outputs are the same, so train (its code edited once) is the restart's hit
    assert forced["ops"]["train"]["message"].startswith(
        f"cache hit: reused the outputs of run {again['ops']['train']['uuid']}"
    )
    assert (_starts(marks, "prep"), _starts(marks, "train")) == (2, 2)

    status, _, err = cli_json_in(prefect_server, tmp_path, "restart", first.uuid, "--force", "x")
    assert status == 2 and "--force: the dag has no op `x`" in err


@pytest.mark.server
def test_restart_from_a_failed_op_reruns_a_reused_op_whose_code_changed(tmp_path: Path) -> None:
    """``restart --from`` reuses records, not the cache: the record's code hash decides."""
    from polyaxon_prefect.prefect.deployments._deploy import generic_flow

    marks = tmp_path / "marks"
    marks.mkdir()
    code = tmp_path / "code"
    code.mkdir()
    for op in ("a", "b", "c"):
        (code / op).mkdir()
        (code / op / f"{op}.py").write_text(_script(marks, op, 1.0))
    fails = f"import os, sys\nif not os.path.exists({str(marks / 'ok')!r}):\n    sys.exit(3)\n"
    (code / "c" / "c.py").write_text(fails + _script(marks, "c", 1.0))
    (code / "dag.yaml").write_text(_dag("code-from", ["a", "b", "c"], folders=True))
    first = run(code / "dag.yaml")
    assert first.status == "failed" and first.uuid is not None

    (code / "a" / "a.py").write_text(_script(marks, "a", 0.5))
    (marks / "ok").write_text("")
    state = generic_flow(restart={"run": first.uuid, "from": "c"}, return_state=True)
    assert state.is_completed(), state.message
    # a's code changed: it ran again; b's did not: reused from its record; c ran from `--from`
    assert (_starts(marks, "a"), _starts(marks, "b"), _starts(marks, "c")) == (2, 1, 1)
