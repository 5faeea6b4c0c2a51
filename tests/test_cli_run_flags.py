"""``run``'s Polyaxon flags refuse a bad command line before any server starts: one line, exit
2 for usage and 1 for a bad ``-HP`` or ``--url``, JSON on stdout under ``--json``, never a
traceback. (The runs themselves: tests/prefect/test_run_flags.py and test_run_seeds.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyaxon_prefect.cli import main

TYPED = str(Path(__file__).resolve().parent.parent / "examples" / "quick-start" / "typed.yaml")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run"], "one of the arguments -f/--file -u/--url is required"),
        (["run", "-P", "x=1"], "one of the arguments -f/--file -u/--url is required"),
        (["run", "-f", TYPED, "--matrix-kind", "grid"], "--matrix-kind only applies to an -HP"),
        (["run", "-f", TYPED, "--matrix-num-runs", "3"], "--matrix-num-runs only applies"),
        (
            ["run", "-f", TYPED, "-HP", "lr=choice:[1]", "--matrix-kind", "grids"],
            "invalid choice",
        ),
        (["run", "-f", TYPED, "-HP", "lr=choice:[1]", "--matrix-concurrency", "0"], "1 or more"),
        (["run", "-f", TYPED, "--name", ""], "must not be empty"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        code = main([*argv, "--json"])
        raise SystemExit(code)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert line.startswith("polyaxon-prefect run: error: ") and says in line
    assert "error" in json.loads(captured.out)


@pytest.mark.parametrize(
    ("argv", "located"),
    [
        (["-HP", "learning_rate"], "-HP: invalid -HP `learning_rate`: expected NAME=KIND:VALUE"),
        (["-HP", "learning_rate=choise:[0.1]"], "-HP: matrix.params.learning_rate.kind: unknown"),
        (["-HP", "epochs=choice:[1]", "--name", "a b"], "--name: name: "),
    ],
)
def test_a_bad_hp_or_name_is_one_located_problem_exit_1(
    argv: list[str], located: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-f", TYPED, *argv]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == "1 problem found.", lines
    assert lines[0].startswith(located), lines
    assert not any("Traceback" in line for line in lines)


def test_a_url_that_cannot_be_fetched_is_one_problem_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--url", "ftp://example.invalid/x.yml", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "ftp://example.invalid/x.yml: the Polyaxonfile at `ftp://example.invalid/x.yml` could "
        "not be fetched: unsupported scheme `ftp`"
    )
    assert json.loads(captured.out)["status"] == "failed"


def test_a_mapping_kind_says_an_hp_matrix_has_params_not_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "run",
        "-f",
        TYPED,
        "-P",
        "epochs=1",
        "-HP",
        "lr=choice:[1]",
        "--matrix-kind",
        "mapping",
    ]
    assert main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "-HP: matrix.values: required field `values` is missing"
    assert all(line.startswith("-HP: ") for line in lines[:-1])


def test_u_is_the_url_and_a_bare_u_is_polyaxons_upload_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``-u URL`` is ``--url`` (the issue's and Polyaxon 1.x's spelling); ``-u`` alone, as
    Polyaxon 2.x's ``--upload``, is accepted with a note and the ``-f`` file is the main one."""
    assert main(["run", "-u", "ftp://example.invalid/x.yml", "--json"]) == 1
    assert "`ftp://example.invalid/x.yml` could not be fetched" in capsys.readouterr().err

    assert main(["run", "-f", TYPED, "-u", "-HP", "epochs=choise:[1]", "--json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("note: -u/--upload changes nothing here")
    assert "-HP: " in err, "the -f file was loaded (and its -HP checked), not a URL"
