"""The code hash of a local op: the pure rules (what is skipped, the budget and its env vars)
and the walk over real folders, then the cache key of a prepared DAG op."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.runtime import CodeBudgetError, PreparedJob, prepare_job
from polyaxon_prefect.runtime._context import ENV_ARTIFACTS_ROOT
from polyaxon_prefect.runtime.cache._code_hash import folder_files, read_code
from polyaxon_prefect.runtime.cache._code_rules import (
    CODE_MAX_BYTES_ENV,
    CODE_MAX_FILES_ENV,
    CodeBudget,
    code_budget,
    code_digest,
    ignore_patterns,
    ignored,
    is_polyaxonfile,
    over_budget,
    skipped_dir,
    skipped_file,
)

# ----------------------------------------------------------------------------- pure rules


def test_noise_is_skipped_code_is_not() -> None:
    assert all(skipped_dir(name) for name in (".git", "__pycache__", ".polyaxon-prefect-run"))
    assert not any(skipped_dir(name) for name in ("src", "data", ".github", "git"))
    assert skipped_file("model.cpython-311.pyc") and skipped_file(".DS_Store")
    assert not skipped_file("model.py") and not skipped_file("pyc.txt")


def test_polyaxonignore_patterns() -> None:
    patterns = ignore_patterns("# outputs\n\nmarks/\n*.ckpt\n/logs/run-*\n!keep.ckpt\n")
    assert patterns == ("marks/", "*.ckpt", "/logs/run-*")
    assert ignored("marks", True, patterns) and ignored("a/marks", True, patterns)
    assert not ignored("marks", False, patterns)  # `dir/` names folders only
    assert ignored("deep/in/model.ckpt", False, patterns)
    assert ignored("logs/run-1", False, patterns) and not ignored("x/logs/run-1", False, patterns)
    assert not ignored("train.py", False, patterns)


def test_a_polyaxonfile_is_the_spec_not_code() -> None:
    assert is_polyaxonfile("dag.yaml", b"version: 1.1\nkind: component\nrun: {}\n")
    assert not is_polyaxonfile("config.yaml", b"lr: 0.1\nlayers: 3\n")
    assert not is_polyaxonfile("notes.txt", b"version: 1\nkind: x\n")
    assert not is_polyaxonfile("nested.yaml", b"a:\n  version: 1\n  kind: x\n")


def test_budget_from_env_and_its_one_line_error() -> None:
    assert code_budget({}) == CodeBudget()
    assert code_budget({CODE_MAX_FILES_ENV: "10", CODE_MAX_BYTES_ENV: "1_000"}) == CodeBudget(
        10, 1000
    )
    for bad in ("many", "-1", "1.5"):
        with pytest.raises(CodeBudgetError) as caught:
            code_budget({CODE_MAX_FILES_ENV: bad})
        assert str(caught.value).startswith(f"{CODE_MAX_FILES_ENV}={bad!r} is not a whole number")
        assert "\n" not in str(caught.value)


def test_over_budget_says_why_and_how() -> None:
    budget = CodeBudget(max_files=2, max_bytes=100)
    assert over_budget(2, 100, budget, "/w") is None
    files = over_budget(3, 10, budget, "/w")
    assert files is not None and "more than 2 files" in files and CODE_MAX_FILES_ENV in files
    size = over_budget(1, 101, budget, "/w")
    assert size is not None and "more than 100 bytes" in size and CODE_MAX_BYTES_ENV in size


def test_the_digest_is_paths_contents_and_runtime_in_any_order() -> None:
    files = [("b.py", "2"), ("a.py", "1")]
    same = code_digest(files, {"python": "3.11"})
    assert same == code_digest(list(reversed(files)), {"python": "3.11"})
    assert same != code_digest([("a.py", "1"), ("c.py", "2")], {"python": "3.11"})  # a rename
    assert same != code_digest(files, {"python": "3.12"})
    assert same != code_digest([], {"python": "3.11"})


# ----------------------------------------------------------------------------- the walk


def _tree(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print(1)\n")
    (root / "pkg" / "model.py").write_text("W = 1\n")
    (root / "dag.yaml").write_text("version: 1.1\nkind: component\nrun: {kind: dag}\n")
    for noise in (".git", "__pycache__", "pkg/__pycache__", "artifacts"):
        (root / noise).mkdir(exist_ok=True)
        (root / noise / "x").write_text(os.urandom(8).hex())
    (root / "pkg" / "model.cpython-311.pyc").write_bytes(os.urandom(8))


def test_the_folder_hash_sees_edits_not_noise_nor_its_place(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    _tree(first)
    _tree(second)  # other noise, same code
    runtime = {"python": "x"}
    budget = CodeBudget()
    one = read_code(first, runtime, budget, [first / "artifacts"])
    two = read_code(second, runtime, budget, [second / "artifacts"])
    assert one.digest is not None and one.digest == two.digest
    assert one.files == 2  # train.py and pkg/model.py: the Polyaxonfile is the spec
    (second / "dag.yaml").write_text("version: 1.1\nkind: component\nrun: {kind: job}\n")
    assert read_code(second, runtime, budget, [second / "artifacts"]).digest == one.digest
    (second / "pkg" / "model.py").write_text("W = 2\n")
    assert read_code(second, runtime, budget, [second / "artifacts"]).digest != one.digest
    empty = tmp_path / "empty"
    empty.mkdir()
    assert read_code(empty, runtime, budget).digest != one.digest
    missing = read_code(tmp_path / "missing", runtime, budget)
    assert missing.digest is not None and missing.files == 0


def test_over_budget_is_not_hashed(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert folder_files(tmp_path, CodeBudget(max_files=1), [tmp_path / "artifacts"]) == (
        f"not cached: its working folder {tmp_path} has more than 1 files to hash "
        f"(raise {CODE_MAX_FILES_ENV}, or run it from a smaller folder)"
    )
    state = read_code(tmp_path, {}, CodeBudget(max_bytes=4), [tmp_path / "artifacts"])
    assert state.digest is None and "more than 4 bytes" in state.reason


# ----------------------------------------------------------------------------- prepared ops


def _op(folder: Path) -> Path:
    path = folder / "op.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: op\n"
        "run: {kind: job, container: {command: [python, train.py]}}\n"
    )
    (folder / "train.py").write_text("print(1)\n")
    return path


def _prepared(path: Path) -> PreparedJob:
    return prepare_job(load_polyaxonfile(path), in_pipeline=True, connections={})


def test_a_dag_op_key_holds_its_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the artifacts root inside the first folder: runs written there are not its code
    monkeypatch.setenv(ENV_ARTIFACTS_ROOT, str(tmp_path / "a" / "artifacts"))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first = _prepared(_op(tmp_path / "a"))
    (tmp_path / "a" / "artifacts" / "default").mkdir(parents=True)
    (tmp_path / "a" / "artifacts" / "default" / "run.log").write_text("a run's output")
    second = _prepared(_op(tmp_path / "b"))
    assert first.code_hash and first.cache_key
    assert (second.code_hash, second.cache_key) == (first.code_hash, first.cache_key)
    (tmp_path / "b" / "train.py").write_text("print(2)\n")
    edited = _prepared(tmp_path / "b" / "op.yaml")
    assert edited.code_hash != first.code_hash and edited.cache_key != first.cache_key

    monkeypatch.setenv(CODE_MAX_FILES_ENV, "0")
    over = _prepared(tmp_path / "b" / "op.yaml")
    assert over.cache_key is None and over.code_hash is None
    assert any("not cached: its working folder" in note for note in over.notes)
    monkeypatch.setenv(CODE_MAX_FILES_ENV, "lots")
    with pytest.raises(CodeBudgetError, match=f"{CODE_MAX_FILES_ENV}='lots'"):
        _prepared(tmp_path / "b" / "op.yaml")


def _commit(repo: Path, message: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    (repo / "train.py").write_text(f"print({message!r})\n")
    for argv in (["add", "."], ["commit", "-qm", message]):
        subprocess.run(["git", *argv], cwd=repo, env=env, check=True)


@pytest.mark.process
def test_a_git_init_steps_commit_is_part_of_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ARTIFACTS_ROOT, str(tmp_path / "artifacts"))
    repo, work = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    work.mkdir()
    _commit(repo, "one")
    path = work / "op.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: op\n"
        f"run: {{kind: job, init: [{{git: {{url: {repo}}}}}], "
        "container: {command: [python, repo/train.py]}}\n"
    )
    first = _prepared(path)
    assert first.code_hash is not None and first.code_hash == _prepared(path).code_hash
    _commit(repo, "two")  # the folder the op runs in is the same: the commit it clones is not
    assert _prepared(path).code_hash not in (None, first.code_hash)
    path.write_text(path.read_text().replace(f"url: {repo}", f"url: {tmp_path / 'gone'}"))
    lost = _prepared(path)
    assert lost.cache_key is None and lost.code_hash is None
    assert any("the commit of its git init step is unknown" in note for note in lost.notes)
