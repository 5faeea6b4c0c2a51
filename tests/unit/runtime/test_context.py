"""`RunContext`: paths, Polyaxon globals and the env var contract."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from polyaxon_prefect.runtime import RunContext, new_run_context, resolve_artifacts_root
from polyaxon_prefect.runtime._context import ENV_ARTIFACTS_ROOT, project_uuid

POLYAXON_GLOBALS = {
    "owner_name",
    "project_name",
    "project_unique_name",
    "project_uuid",
    "run_info",
    "name",
    "uuid",
    "namespace",
    "iteration",
    "context_path",
    "artifacts_path",
    "run_artifacts_path",
    "run_outputs_path",
    "run_relative_outputs_path",
    "created_at",
    "compiled_at",
    "schedule_at",
    "started_at",
    "finished_at",
    "duration",
    "cloning_kind",
    "original_uuid",
    "is_independent",
    "username",
}


def test_make_dirs_creates_the_run_directories(tmp_path: Path) -> None:
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path).make_dirs()
    assert re.fullmatch(r"[0-9a-f]{32}", ctx.uuid)
    assert ctx.run_path == tmp_path / "mnist" / ctx.uuid
    assert ctx.run_artifacts_path == ctx.run_path
    assert ctx.run_outputs_path == ctx.run_path / "outputs"
    assert ctx.run_outputs_path.is_dir()
    assert ctx.artifacts_path.is_dir()
    assert ctx.context_path == ctx.run_path / "context"
    assert ctx.run_relative_outputs_path == f"mnist/{ctx.uuid}/outputs"


def test_make_new_dirs_says_whether_the_run_folder_was_made_now(tmp_path: Path) -> None:
    # a folder made now holds no earlier attempt's files: the executor drops none
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path / "new-root")
    assert ctx.make_new_dirs() is True
    assert ctx.run_outputs_path.is_dir() and ctx.artifacts_path.is_dir()
    (ctx.run_outputs_path / "outputs.json").write_text("{}")
    assert ctx.make_new_dirs() is False  # a retry's: its files are still there
    assert (ctx.run_outputs_path / "outputs.json").is_file()
    (ctx.artifacts_path).rmdir()
    assert ctx.make_new_dirs() is False and ctx.artifacts_path.is_dir()


def test_a_replaced_context_has_the_paths_of_its_own_fields(tmp_path: Path) -> None:
    # the paths are made once per context: a replaced one (another uuid, root or project)
    # never shows the paths of the one it was made from
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path)
    assert ctx.run_outputs_path == tmp_path / "mnist" / ctx.uuid / "outputs"
    moved = replace(ctx, uuid="abc123", artifacts_root=tmp_path / "other", project_name="p2")
    assert moved.run_path == tmp_path / "other" / "p2" / "abc123"
    assert moved.run_outputs_path == moved.run_path / "outputs"
    assert moved.artifacts_path == moved.run_path / "context" / "artifacts"
    assert moved != ctx and replace(moved, uuid=ctx.uuid).run_path != ctx.run_path
    assert replace(ctx) == ctx and replace(ctx).run_path == ctx.run_path


def test_two_runs_get_distinct_ids_and_paths(tmp_path: Path) -> None:
    a = new_run_context("train", "mnist", artifacts_root=tmp_path).make_dirs()
    b = new_run_context("train", "mnist", artifacts_root=tmp_path).make_dirs()
    assert a.uuid != b.uuid
    assert a.run_path != b.run_path


def test_artifacts_root_argument_beats_env_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_ARTIFACTS_ROOT, str(tmp_path / "from-env"))
    assert resolve_artifacts_root(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_artifacts_root() == tmp_path / "from-env"
    monkeypatch.delenv(ENV_ARTIFACTS_ROOT)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_artifacts_root() == tmp_path / "home" / ".polyaxon_prefect" / "artifacts"


def test_relative_artifacts_root_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_artifacts_root("out") == tmp_path / "out"


def test_globals_dict_has_every_polyaxon_global(tmp_path: Path) -> None:
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path, iteration=3).make_dirs()
    data = ctx.globals_dict()
    assert set(data) == POLYAXON_GLOBALS
    assert data["project_unique_name"] == "local.mnist"
    assert data["run_info"] == f"local.mnist.runs.{ctx.uuid}"
    assert data["iteration"] == 3
    assert data["run_outputs_path"] == str(ctx.run_outputs_path)
    assert data["project_uuid"] == project_uuid("local", "mnist")
    assert data["started_at"] is None and data["duration"] is None
    assert data["is_independent"] is True
    json.dumps(data)  # templates and env vars need plain values


def test_duration_and_times_once_the_run_finished(tmp_path: Path) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    ctx = replace(
        new_run_context("train", "mnist", artifacts_root=tmp_path).make_dirs(),
        started_at=start,
        finished_at=start + timedelta(seconds=90),
    )
    data = ctx.globals_dict()
    assert data["duration"] == 90.0
    assert data["started_at"] == "2024-01-01T00:00:00+00:00"


def test_project_uuid_is_stable_per_project() -> None:
    assert project_uuid("local", "mnist") == project_uuid("local", "mnist")
    assert project_uuid("local", "mnist") != project_uuid("local", "cifar")


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".."])
def test_project_names_that_are_not_directory_safe_are_rejected(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="cannot be used as a directory name"):
        RunContext(uuid="a" * 32, name="x", project_name=bad, artifacts_root=tmp_path)


def test_env_vars_carry_the_contract_and_polyaxon_aliases(tmp_path: Path) -> None:
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path, iteration=2).make_dirs()
    env = ctx.env_vars({"learning_rate": 0.01, "layers": [1, 2]})
    assert env["POLYAXON_PREFECT_RUN_UUID"] == ctx.uuid
    assert env["POLYAXON_PREFECT_RUN_NAME"] == "train"
    assert env["POLYAXON_PREFECT_PROJECT"] == "mnist"
    assert env["POLYAXON_PREFECT_RUN_ARTIFACTS_PATH"] == str(ctx.run_artifacts_path)
    assert env["POLYAXON_PREFECT_RUN_OUTPUTS_PATH"] == str(ctx.run_outputs_path)
    assert json.loads(env["POLYAXON_PREFECT_PARAMS"]) == {"learning_rate": 0.01, "layers": [1, 2]}
    assert env["POLYAXON_PREFECT_ITERATION"] == "2"
    # Polyaxon's own names, so scripts written for Polyaxon find them
    assert env["POLYAXON_RUN_OUTPUTS_PATH"] == str(ctx.run_outputs_path)
    assert env["POLYAXON_PARAMS"] == env["POLYAXON_PREFECT_PARAMS"]
    assert env["POLYAXON_RUN_INSTANCE"] == f"local.mnist.runs.{ctx.uuid}"
    assert all(isinstance(v, str) for v in env.values())


def test_env_vars_without_params_is_an_empty_object(tmp_path: Path) -> None:
    ctx = new_run_context("train", "mnist", artifacts_root=tmp_path).make_dirs()
    env = ctx.env_vars()
    assert env["POLYAXON_PREFECT_PARAMS"] == "{}"
    assert "POLYAXON_PREFECT_ITERATION" not in env


def test_globals_username_is_the_same_for_a_job_a_dag_op_and_a_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every runner builds its context with `new_run_context`: none leaves ``username`` unset."""
    import getpass

    from polyaxon_prefect.loading._load import load_polyaxonfile
    from polyaxon_prefect.prefect import _dag
    from polyaxon_prefect.runtime import new_run_context, project_name
    from polyaxon_prefect.runtime._one_process import prepare_job

    monkeypatch.setattr(getpass, "getuser", lambda: "alice")
    monkeypatch.setenv(ENV_ARTIFACTS_ROOT, str(tmp_path / "artifacts"))
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nrun:\n  kind: job\n"
        "  container: {command: [echo, '{{ globals.username }}']}\n",
        encoding="utf-8",
    )
    job = prepare_job(load_polyaxonfile(path), connections={})
    dag = new_run_context("dag")  # what a DAG run without a context gets (`_DagFlow`)
    op = _dag._child_context("op", dag)
    trial = new_run_context("trial", project_name(), iteration=0).make_dirs()

    assert job.argv[-1] == "alice"
    contexts = (job.context, dag, op, trial, new_run_context("x"))
    assert {ctx.globals_dict()["username"] for ctx in contexts} == {"alice"}
    assert not new_run_context("x").run_path.exists()  # nothing is written before a run starts
