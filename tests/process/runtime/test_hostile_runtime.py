"""Hostile and careless input to the local runtime: one test per attack, real files, a real
`git` and real processes. Each asserts the exact outcome: the untouched directory, the single
argument, the value that arrives unrendered, the masked text."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime._one_process import execute_job, prepare_job
from polyaxon_prefect.runtime.logs._masking import mask_value
from polyaxon_prefect.runtime.render._connections import load_connections
from tests.unit.runtime.test_hostile_runtime import (
    ECHO_ARGV,
    PY,
    closed_port,
    component,
    context,
    echo_component,
    job_with_init,
    needs_git,
    run,
    snapshot,
)

pytestmark = pytest.mark.process


def bare_repo(tmp_path: Path) -> Path:
    work = tmp_path / "src"
    work.mkdir()
    (work / "train.py").write_text("print('hi')\n", encoding="utf-8")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "first"], check=True)
    bare = tmp_path / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


# ----------------------------------------------------------------------------- 1: init git


@needs_git
def test_1_a_url_starting_with_a_dash_is_never_an_option(tmp_path: Path):
    pwned = tmp_path / "pwned"
    url = f"--upload-pack=touch {pwned}"
    path = job_with_init(tmp_path, [{"git": {"url": url}}])

    result, _ = run(path, tmp_path)

    assert result.status == "failed"
    assert not pwned.exists()


@needs_git
def test_1_a_clone_lands_in_the_run_and_a_relative_escape_is_refused(tmp_path: Path):
    bare = bare_repo(tmp_path)
    ok = job_with_init(tmp_path, [{"git": {"url": f"file://{bare}"}}])

    result, _ = run(ok, tmp_path)

    assert result.status == "succeeded", result.message
    clones = list((tmp_path / "runs").rglob("repo/train.py"))
    assert len(clones) == 1
    escape = job_with_init(tmp_path, [{"git": {"url": f"file://{bare}"}, "path": "../../../out"}])
    result, _ = run(escape, tmp_path)
    assert result.status == "failed" and "outside the run's context directory" in result.message
    assert not (tmp_path / "out").exists()


@needs_git
def test_1_an_explicit_absolute_destination_that_is_not_empty_is_refused(tmp_path: Path):
    bare = bare_repo(tmp_path)
    target = tmp_path / "mine"
    (target / "repo").mkdir(parents=True)
    (target / "repo" / "notes.txt").write_text("mine", encoding="utf-8")
    path = job_with_init(tmp_path, [{"git": {"url": f"file://{bare}"}, "path": str(target)}])

    result, _ = run(path, tmp_path)

    assert result.status == "failed" and "not empty" in result.message
    assert snapshot(target) == {"repo/notes.txt": "mine"}


# ----------------------------------------------------------------------------- 3, 4: args


def _argv(lines: list[str]) -> list[str]:
    [line] = [line for line in lines if line.startswith("ARGV=")]
    return list(json.loads(line[len("ARGV=") :]))


def test_3_a_str_param_that_looks_like_a_list_is_one_argument(tmp_path: Path):
    result, lines = run(echo_component(tmp_path), tmp_path, {"msg": "['--evil-flag', 'x']"})

    assert result.status == "succeeded"
    assert _argv(lines) == ["['--evil-flag', 'x']"]


def test_3_a_list_param_still_becomes_several_arguments(tmp_path: Path):
    result, lines = run(echo_component(tmp_path, "list"), tmp_path, {"msg": '["-a", "b"]'})

    assert result.status == "succeeded"
    assert _argv(lines) == ["-a", "b"]


@pytest.mark.parametrize(
    "value", ["{{ 7*7 }}", "{{ globals }}", "{% for i in range(3) %}x{% endfor %}"]
)
def test_4_a_value_given_with_p_is_data_never_a_template(tmp_path: Path, value: str):
    result, lines = run(echo_component(tmp_path), tmp_path, {"msg": value})

    assert result.status == "succeeded"
    assert _argv(lines) == [value]


def test_4_a_template_written_in_the_file_is_still_rendered(tmp_path: Path):
    path = component(
        tmp_path,
        {
            "inputs": [{"name": "msg", "type": "str", "value": "{{ 6 * 7 }}", "isOptional": True}],
            "run": {"kind": "job", "container": {"command": [PY, "-c", ECHO_ARGV, "{{ msg }}"]}},
        },
    )

    _result, lines = run(path, tmp_path)

    assert _argv(lines) == ["42"]


# ----------------------------------------------------------------------------- 7, 8, 9: secrets


def test_9_credentials_in_a_git_url_never_show(tmp_path: Path):
    token = "ghp_TOKEN0123456789abcdef"
    url = f"https://user:{token}@127.0.0.1:{closed_port()}/org/repo.git"
    path = job_with_init(tmp_path, [{"git": {"url": url}}])

    result, lines = run(path, tmp_path)

    assert result.status == "failed"
    assert token not in result.message and "***@127.0.0.1" in result.message
    assert not [line for line in lines if token in line]


def test_8_a_job_returns_its_real_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    secret = "s3cr3t-VALUE-777"
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "creds.env").write_text(f"API_TOKEN={secret}\n", encoding="utf-8")
    monkeypatch.setenv("POLYAXON_PREFECT_SECRETS_DIR", str(secrets_dir))
    connections = tmp_path / "connections.yaml"
    connections.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "api",
                    "kind": "http",
                    "schema": {"url": "https://x"},
                    "secret": {"name": "creds"},
                }
            ]
        ),
        encoding="utf-8",
    )
    code = (
        "import os; from polyaxon_prefect import tracking; "
        "print('token is', os.environ['API_TOKEN']); "
        "tracking.log_outputs(token=os.environ['API_TOKEN'])"
    )
    path = component(
        tmp_path,
        {
            "outputs": [{"name": "token", "type": "str"}],
            "run": {
                "kind": "job",
                "connections": ["api"],
                "container": {"command": [PY, "-c", code]},
            },
        },
    )
    lines: list[str] = []
    job = prepare_job(
        load_polyaxonfile(path),
        run_context=context(tmp_path),
        connections=load_connections(connections),
    )

    result = execute_job(job, on_line=lambda _s, line: lines.append(line))

    assert result.status == "succeeded"
    assert result.outputs == {"token": secret}  # data for the ops downstream
    assert "token is ***" in lines and not [line for line in lines if secret in line]
    assert secret not in json.dumps(mask_value(result.outputs, job.secrets))
