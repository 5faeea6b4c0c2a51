"""The init source registry: every handler passes the conformance suite, none is missing."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from polyaxon_prefect.exceptions import PolyaxonfileError
from polyaxon_prefect.runtime import Connection
from polyaxon_prefect.runtime._errors import InitStepError
from polyaxon_prefect.runtime.render._init_steps import INIT_HANDLERS, init_handler
from polyaxon_prefect.testing import InitHandlerTestCase
from polyaxon_prefect.testing.init_handlers import InitSample

pytestmark = pytest.mark.process


def _git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("print('train')\n", encoding="utf-8")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *argv], cwd=repo, env=env, check=True)
    return repo


def _data(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("data\n", encoding="utf-8")


def _git(tmp_path: Path) -> InitSample:
    url = str(_git_repo(tmp_path))
    broken = {"git": {"url": str(tmp_path / "no-such-repo")}}
    return InitSample({"git": {"url": url}}, ["repo/train.py"], broken)


def _paths(tmp_path: Path) -> InitSample:
    _data(tmp_path)
    return InitSample({"paths": ["data.txt"]}, ["data.txt"], {"paths": ["missing.txt"]})


def _artifacts(tmp_path: Path) -> InitSample:
    _data(tmp_path)
    broken = {"artifacts": {"files": ["missing.txt"]}}
    return InitSample({"artifacts": {"files": ["data.txt"]}}, ["data.txt"], broken)


def _connection(tmp_path: Path) -> InitSample:
    connection = Connection(name="store", kind="s3", env=[{"name": "STORE", "value": "s3://b"}])
    return InitSample({"connection": "store"}, connections={"store": connection})


# A sample per registered source (a new source without one fails the first test below).
SAMPLES: dict[str, Callable[[Path], InitSample]] = {
    "git": _git,
    "file": lambda _: InitSample(
        {"file": {"filename": "a.txt", "content": "hi"}},
        ["a.txt"],
        {"file": {"filename": "../a.txt", "content": "hi"}},
    ),
    "dockerfile": lambda _: InitSample(
        {"dockerfile": {"image": "python:3.12"}},
        ["Dockerfile"],
        {"dockerfile": {"image": "python:3.12", "filename": "/etc/Dockerfile"}},
    ),
    "paths": _paths,
    "artifacts": _artifacts,
    "container": lambda _: InitSample(
        {"container": {"command": ["python", "-c", "open('made', 'w').close()"]}},
        ["made"],
        {"container": {"command": ["python", "-c", "raise SystemExit(4)"]}},
    ),
    "connection": _connection,
}


def test_every_registered_source_has_a_sample() -> None:
    assert set(INIT_HANDLERS) == set(SAMPLES)


@pytest.mark.parametrize("kind", sorted(INIT_HANDLERS))
def test_conformance(kind: str, tmp_path: Path) -> None:
    InitHandlerTestCase(kind, SAMPLES[kind](tmp_path), tmp_path).run_all()


def test_a_source_without_a_handler_is_refused_when_the_job_is_prepared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never a step that silently does nothing: the job does not even start."""
    monkeypatch.delitem(INIT_HANDLERS, "file")
    case = InitHandlerTestCase("file", SAMPLES["file"](tmp_path), tmp_path)
    with pytest.raises(PolyaxonfileError) as info:
        case.prepare(case.sample.entry)
    [problem] = info.value.problems
    assert problem.rule == "unsupported_init"
    assert problem.message == "init `file` cannot run locally: no handler runs it"
    assert problem.path == ("component", "run", "init", 0, "file")


def test_a_step_of_an_unknown_source_fails_when_it_runs() -> None:
    with pytest.raises(InitStepError, match="no handler runs init `url`"):
        init_handler("url")
