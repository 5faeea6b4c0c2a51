"""Hostile and careless input to the local runtime: one test per attack, real files, a real
`git` and real processes. Each asserts the exact outcome: the untouched directory, the single
argument, the value that arrives unrendered, the masked text."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime._context import RunContext
from polyaxon_prefect.runtime._one_process import execute_job, prepare_job
from polyaxon_prefect.runtime.logs._masking import mask_text, mask_value
from polyaxon_prefect.runtime.render._connections import (
    ConnectionsError,
    load_connections,
    read_dotenv,
)

PY = sys.executable
ECHO_ARGV = "import json, sys; print('ARGV=' + json.dumps(sys.argv[1:]))"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def component(folder: Path, body: dict[str, Any], name: str = "hostile") -> Path:
    spec = {"version": 1.1, "kind": "component", "name": name, **body}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def job_with_init(folder: Path, init: list[dict[str, Any]]) -> Path:
    return component(
        folder,
        {"run": {"kind": "job", "init": init, "container": {"command": [PY, "-c", "pass"]}}},
    )


def context(tmp_path: Path) -> RunContext:
    return RunContext(
        uuid="0" * 32, name="hostile", project_name="tests", artifacts_root=tmp_path / "runs"
    ).make_dirs()


def run(path: Path, tmp_path: Path, params: dict[str, str] | None = None) -> tuple[Any, list[str]]:
    lines: list[str] = []
    job = prepare_job(load_polyaxonfile(path, [], params or {}), run_context=context(tmp_path))
    result = execute_job(job, on_line=lambda _stream, line: lines.append(line))
    return result, lines


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# ----------------------------------------------------------------------------- 1: init git


@needs_git
def test_1_a_failing_clone_leaves_an_existing_directory_as_it_was(tmp_path: Path):
    target = tmp_path / "checkout"
    (target / "repo").mkdir(parents=True)
    (target / "repo" / "precious.txt").write_text("keep me", encoding="utf-8")
    before = snapshot(target)
    url = f"http://127.0.0.1:{closed_port()}/repo"
    path = job_with_init(tmp_path, [{"git": {"url": url}, "path": str(target)}])

    result, _ = run(path, tmp_path)

    assert result.status == "failed"
    assert snapshot(target) == before


@needs_git
def test_1_a_url_ending_in_dotdot_is_refused_and_deletes_nothing(tmp_path: Path):
    target = tmp_path / "area" / "checkout"
    target.mkdir(parents=True)
    (tmp_path / "area" / "sibling.txt").write_text("keep me", encoding="utf-8")
    before = snapshot(tmp_path / "area")
    path = job_with_init(
        tmp_path, [{"git": {"url": f"http://127.0.0.1:{closed_port()}/x/.."}, "path": str(target)}]
    )

    result, _ = run(path, tmp_path)

    assert result.status == "failed" and "usable directory name" in result.message
    assert snapshot(tmp_path / "area") == before and target.is_dir()


# ----------------------------------------------------------------------------- 2: init file


def test_2_a_file_name_never_escapes_the_run(tmp_path: Path):
    outside = tmp_path / "somewhere" / "x.txt"
    path = job_with_init(
        tmp_path, [{"file": {"filename": "../../../../somewhere/x.txt", "content": "evil"}}]
    )

    result, _ = run(path, tmp_path)

    assert result.status == "failed" and "relative name inside" in result.message
    assert not outside.exists()


def test_2_paths_never_copy_out_of_the_run(tmp_path: Path):
    source = tmp_path / "data.txt"
    source.write_text("data", encoding="utf-8")
    path = job_with_init(tmp_path, [{"paths": [[str(source), "../../../../stolen.txt"]]}])

    result, _ = run(path, tmp_path)

    assert result.status == "failed" and "outside the run's context directory" in result.message
    assert not (tmp_path / "stolen.txt").exists()


# ----------------------------------------------------------------------------- 3, 4: args


def echo_component(tmp_path: Path, input_type: str = "str") -> Path:
    return component(
        tmp_path,
        {
            "inputs": [{"name": "msg", "type": input_type}],
            "run": {"kind": "job", "container": {"command": [PY, "-c", ECHO_ARGV, "{{ msg }}"]}},
        },
        name=f"echo-{input_type}",
    )


def test_4_a_templated_value_for_an_int_input_is_a_type_error(tmp_path: Path):
    with pytest.raises(PolyaxonfileError, match="param `msg`"):
        run(echo_component(tmp_path, "int"), tmp_path, {"msg": "{{ 7*7 }}"})


# ----------------------------------------------------------------------------- 7, 8, 9: secrets


def test_7_8_masking_is_for_people_the_values_stay_data():
    secret = "hunter2-SECRET"
    outputs = {"token": f"x-{secret}", "n": 3, "nested": [{"url": "https://u:p4ss@h/x"}]}

    shown = mask_value(outputs, [secret])

    assert shown == {"token": "x-***", "n": 3, "nested": [{"url": "https://***@h/x"}]}
    assert outputs["token"] == f"x-{secret}"  # the data itself is untouched
    assert mask_text(f"see {secret} at https://a:b@c/d", [secret]) == "see *** at https://***@c/d"


# ----------------------------------------------------------------------------- 18: connections


def test_18_a_non_utf8_connections_file_is_a_located_error(tmp_path: Path):
    path = tmp_path / "connections.yaml"
    path.write_bytes(b"- name: a\n  kind: http\n  description: caf\xe9\n")

    with pytest.raises(ConnectionsError) as caught:
        load_connections(path)

    [problem] = caught.value.problems
    assert problem.file == str(path) and problem.line == 3 and problem.rule == "file_encoding"


def test_18_a_non_utf8_dotenv_is_a_located_error(tmp_path: Path):
    path = tmp_path / "creds.env"
    path.write_bytes(b"A=1\nB=\xff\xfe\n")

    with pytest.raises(ConnectionsError) as caught:
        read_dotenv(path)

    [problem] = caught.value.problems
    assert problem.line == 2 and "not a UTF-8 text file" in problem.message


def test_an_unexpected_param_has_one_rule_at_load_and_at_run_time(tmp_path: Path):
    path = echo_component(tmp_path)

    with pytest.raises(PolyaxonfileError) as at_load:
        load_polyaxonfile(path, [], {"msg": "hi", "lrr": "0.1"})
    loaded = load_polyaxonfile(path, [], {"msg": "hi"})
    with pytest.raises(PolyaxonfileError) as at_run:  # e.g. a sweep suggestion or a DAG ref
        prepare_job(loaded, run_context=context(tmp_path), params={"lrr": 0.1})

    [load_problem] = at_load.value.problems
    [run_problem] = at_run.value.problems
    assert load_problem.rule == run_problem.rule == "param_unexpected"
    assert load_problem.message == run_problem.message
