"""A pathRef to a file that is no component is one problem that says so, and none of the
file's content reaches the terminal (a credentials file's lines would otherwise be quoted back
as the component's unknown keys)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyaxon_prefect.cli import main
from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile

SECRET = "6$s3cr3tHASHvalue"
SHADOW_LIKE = f"root:${SECRET}:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"


def _op(tmp_path: Path, target: str) -> Path:
    op = tmp_path / "op.yaml"
    op.write_text(f"version: 1.1\nkind: operation\npathRef: {target}\n")
    return op


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("shadow", SHADOW_LIKE, "neither `kind: component` nor a `run` section"),
        ("settings.yaml", f"user: admin\npassword: {SECRET}\n", "neither `kind: component`"),
        ("notes.txt", f"token: {SECRET}\n  nested: [oops\n", "it is not YAML"),
    ],
)
def test_a_file_that_is_no_component_is_one_line_without_its_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, says: str
) -> None:
    (tmp_path / name).write_text(text)
    op = _op(tmp_path, name)
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(str(op))
    (problem,) = info.value.problems
    assert problem.rule == "component_ref" and problem.file == str(op) and problem.line == 3
    assert says in problem.message

    assert main(["check", "-f", str(op)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 2, err  # the problem, then "1 problem found."
    assert SECRET not in err and "daemon" not in err and "password" not in err


def test_a_broken_component_still_gets_its_own_located_problems(tmp_path: Path) -> None:
    (tmp_path / "comp.yaml").write_text(
        "version: 1.1\nkind: component\nrun: {kind: job, container: {image: x}}\nrnu: 1\n"
    )
    with pytest.raises(PolyaxonfileError) as info:
        load_polyaxonfile(str(_op(tmp_path, "comp.yaml")))
    (problem,) = info.value.problems
    assert problem.file == str(tmp_path / "comp.yaml") and "rnu" in problem.message
