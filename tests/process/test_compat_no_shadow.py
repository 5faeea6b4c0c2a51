"""A real ``polyaxon`` / ``polyaxon_client`` is never shadowed by the compat packages: the
runtime adds them to a job's ``PYTHONPATH`` only when the job's interpreter cannot import the
real one, checked in this process for our interpreter and by a probe for another one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from polyaxon_prefect.loading._load import load_polyaxonfile
from polyaxon_prefect.runtime import new_run_context
from polyaxon_prefect.runtime._one_process import execute_job, prepare_job
from polyaxon_prefect.runtime.render._compat_path import COMPAT_DIR, PACKAGES, compat_env

pytestmark = pytest.mark.process

SCRIPT = """\
import json, polyaxon, polyaxon_client
from polyaxon import tracking
print(json.dumps({"polyaxon": polyaxon.__file__, "client": polyaxon_client.__file__}))
"""


def fake_package(root: Path, name: str) -> Path:
    """A stand-in for a real install: a package that is not ours, with a tracking module."""
    package = root / name
    (package / "tracking").mkdir(parents=True)
    (package / "__init__.py").write_text("REAL = True\n")
    (package / "tracking" / "__init__.py").write_text("def init():\n    return 'real'\n")
    return package


def run_job(tmp_path: Path, command: list[str], env: dict[str, str] | None = None) -> dict:
    (tmp_path / "script.py").write_text(SCRIPT)
    spec = {
        "version": 1.1,
        "kind": "component",
        "run": {
            "kind": "job",
            "container": {
                "command": command,
                "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
            },
        },
    }
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(json.dumps(spec))
    ctx = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts")
    job = prepare_job(load_polyaxonfile(path), connections={}, run_context=ctx)
    lines: list[str] = []
    result = execute_job(job, on_line=lambda stream, line: lines.append(line))
    assert str(result.status) == "succeeded", (result.message, lines)
    return json.loads(next(line for line in lines if line.startswith("{")))


def test_without_a_real_install_the_job_gets_the_compat_packages(tmp_path: Path) -> None:
    where = run_job(tmp_path, ["python", "script.py"])
    assert where["polyaxon"].startswith(str(PACKAGES["polyaxon"]))
    assert where["client"].startswith(str(PACKAGES["polyaxon_client"]))


def test_a_real_polyaxon_on_the_jobs_pythonpath_wins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fake_package(site, "polyaxon")
    where = run_job(tmp_path, ["python", "script.py"], env={"PYTHONPATH": str(site)})
    assert where["polyaxon"] == str(site / "polyaxon" / "__init__.py")
    # the other one is still missing, so its stand-in is there
    assert where["client"].startswith(str(PACKAGES["polyaxon_client"]))


def test_compat_env_adds_nothing_when_both_are_installed(tmp_path: Path) -> None:
    fake_package(tmp_path, "polyaxon")
    fake_package(tmp_path, "polyaxon_client")
    assert compat_env([sys.executable, "x.py"], {"PYTHONPATH": str(tmp_path)}, []) == {}
    added = compat_env([sys.executable, "x.py"], {"PYTHONPATH": "/elsewhere"}, ["acc"])
    assert added["PYTHONPATH"].split(os.pathsep)[0] == "/elsewhere"  # theirs first
    assert str(COMPAT_DIR) in added["PYTHONPATH"]


def test_another_interpreter_with_polyaxon_in_its_site_packages_is_probed(tmp_path: Path) -> None:
    """A second Python (a venv without our packages) that has ``polyaxon`` installed in its
    own site-packages: the probe sees it, only ``polyaxon_client`` gets a stand-in."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    fake_package(Path(purelib), "polyaxon")
    where = run_job(tmp_path, [str(python), "script.py"])
    assert where["polyaxon"] == str(Path(purelib) / "polyaxon" / "__init__.py")
    assert where["client"].startswith(str(PACKAGES["polyaxon_client"]))


@pytest.mark.slow
def test_real_polyaxon_from_the_index_is_never_shadowed(tmp_path: Path) -> None:
    """``pip install polyaxon`` (2.x) in a throwaway venv: a job run with that venv's Python
    imports the real ``polyaxon`` and its ``tracking``, not ours. The venv gets no pip of its
    own (this interpreter's pip installs into it, ``--python``) and the install compiles no
    bytecode: the same packages in the same site-packages, for a fifth of the CPU."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    done = subprocess.run(
        [*pip, "install", "-q", "--no-compile", "polyaxon>=2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install polyaxon from the index here: {done.stderr[-300:]}")
    where = run_job(tmp_path, [str(python), "script.py"])
    assert "site-packages" in where["polyaxon"] and str(COMPAT_DIR) not in where["polyaxon"]
    assert where["client"].startswith(str(PACKAGES["polyaxon_client"]))
