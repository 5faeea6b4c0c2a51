"""The `polyaxon-prefect` command line: check, compile, upgrade; exit codes and output shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from polyaxon_prefect.cli import main

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "examples" / "quick-start"
CORPUS = ROOT / "tests" / "corpus"


def test_check_valid_dag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(QUICK / "dag.yaml")]) == 0
    assert "valid (dag `automated-process`)" in capsys.readouterr().out


def test_check_reports_every_problem_one_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1.1\n"
        "kind: component\n"
        "inputs:\n"
        "- {name: lr, type: float, value: abc}\n"
        "run:\n"
        "  kind: job\n"
        "  contaner: {image: x}\n"
        "descripton: typo\n"
    )
    assert main(["check", "-f", str(bad)]) == 1
    err = capsys.readouterr().err.splitlines()
    problems = [line for line in err if line.startswith(str(bad))]
    assert len(problems) >= 3, err
    assert any(
        ":7:3: run.contaner: unknown key `contaner`" in p and "`container`" in p for p in problems
    )
    assert any(":8:1: descripton: unknown key" in p and "`description`" in p for p in problems)
    assert any(":4:" in p and "inputs[0]" in p for p in problems)


def test_check_json_lists_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1.1\nkind: component\nrun: {kind: jobb}\n")
    assert main(["check", "-f", str(bad), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)
    assert problems[0]["path"] == "run.kind"
    assert problems[0]["line"] == 3
    assert problems[0]["rule"] == "union_tag_invalid"
    assert problems[0]["hint"] == "did you mean `job`?"


def test_check_missing_required_param_and_cli_param_typing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "-f", str(QUICK / "typed.yaml")]) == 1
    assert "epochs" in capsys.readouterr().err
    assert main(["check", "-f", str(QUICK / "typed.yaml"), "-P", "epochs=3"]) == 0
    assert main(["check", "-f", str(QUICK / "typed.yaml"), "-P", "epochs=3.5"]) == 1
    assert "epochs" in capsys.readouterr().err


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["check"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["nope"])
    assert info.value.code == 2


def test_bad_param_syntax_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "-f", str(QUICK / "typed.yaml"), "-P", "epochs"]) == 1
    assert "NAME=VALUE" in capsys.readouterr().err


def test_compile_types_params_and_inlines_path_ref(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "compile",
            "-f",
            str(QUICK / "typed.yaml"),
            "-P",
            "epochs=3",
            "-P",
            "learning_rate=0.5",
            "--format",
            "json",
        ]
    )
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "operation"
    assert document["params"]["epochs"]["value"] == 3
    assert document["params"]["learning_rate"]["value"] == 0.5
    assert document["component"]["run"]["kind"] == "job"

    assert main(["compile", "-f", str(QUICK / "hyperparams_grid.yaml")]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert "pathRef" not in document
    assert document["component"]["name"] == "typed-experiment"
    assert document["matrix"]["kind"] == "grid"


def test_presets_apply_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = tmp_path / "preset.yaml"
    preset.write_text("isPreset: true\ntermination: {maxRetries: 3, timeout: 60}\n")
    code = main(
        [
            "compile",
            "-f",
            str(QUICK / "typed.yaml"),
            "-f",
            str(preset),
            "-P",
            "epochs=1",
            "--format",
            "json",
        ]
    )
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["termination"] == {"maxRetries": 3, "timeout": 60}


def test_upgrade_prints_v11_that_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    legacy = CORPUS / "polyaxon-schemas@v0.5__tests__fixtures__distributed_tensorflow_file.yml"
    assert main(["upgrade", "-f", str(legacy)]) == 0
    text = capsys.readouterr().out
    upgraded = yaml.safe_load(text)
    assert upgraded["version"] == 1.1
    assert upgraded["kind"] in ("component", "operation")
    out = tmp_path / "upgraded.yaml"
    out.write_text(text)
    assert main(["check", "-f", str(out)]) == 0
    assert "valid (tfjob" in capsys.readouterr().out


@pytest.mark.process
def test_console_script_runs_in_a_subprocess() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "polyaxon_prefect.cli", "check", "-f", str(QUICK / "dag.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.process
def test_check_does_not_import_prefect_or_optuna() -> None:
    code = (
        "import sys; import polyaxon_prefect; from polyaxon_prefect.cli import main; "
        f"rc = main(['check', '-f', {str(QUICK / 'dag.yaml')!r}]); "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('prefect', 'optuna', 'numpy', 'kubernetes', 'kubernetes_asyncio', 'mlflow')); "
        "print(heavy); sys.exit(rc)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
