"""The docker backend's choices that need no container: which CLI, which variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from polyaxon_prefect.runtime._context import new_run_context
from polyaxon_prefect.runtime.docker._container import (
    TRACKING_PATH,
    ContainerCliError,
    container_environment,
    find_cli,
)


def test_a_named_cli_that_is_not_installed_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLYAXON_PREFECT_CONTAINER_CLI", "no-such-container-cli")
    find_cli.cache_clear()
    try:
        with pytest.raises(ContainerCliError, match=r"no-such-container-cli.*no such program"):
            find_cli()
    finally:
        find_cli.cache_clear()


def test_the_container_gets_the_contract_and_the_ops_variables_by_name_only(
    tmp_path: Path,
) -> None:
    context = new_run_context("op", artifacts_root=tmp_path)
    contract = context.env_vars({"lr": 0.1})
    env = {**os.environ, **contract, "TOKEN": "s3cret"}
    cli_env, names = container_environment(env, context)
    assert set(contract) <= set(names)
    assert "TOKEN" in names and "HOME" not in names  # inherited: means nothing in an image
    assert cli_env["TOKEN"] == "s3cret"  # the value travels in the CLI's environment
    assert cli_env["PYTHONPATH"] == TRACKING_PATH
    assert "/usr/sbin" in cli_env["PATH"].split(os.pathsep)


def _loaded(tmp_path: Path, text: str) -> object:
    from polyaxon_prefect.loading import load_polyaxonfile

    path = tmp_path / "op.yaml"
    path.write_text(text, encoding="utf-8")
    return load_polyaxonfile(str(path))


def test_an_op_without_an_image_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from polyaxon_prefect.exceptions import PolyaxonfileError
    from polyaxon_prefect.runtime import executor_for

    loaded = _loaded(
        tmp_path,
        "version: 1.1\nkind: component\nname: bare\n"
        "run: {kind: job, container: {command: [/bin/true]}}\n",
    )
    with pytest.raises(PolyaxonfileError, match=r"no `container\.image`"):
        executor_for("job", "docker").prepare(loaded)  # type: ignore[arg-type]


def test_an_ops_own_build_section_is_built_first_and_the_op_runs_in_its_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from polyaxon_prefect.runtime import executor_for
    from polyaxon_prefect.runtime.render._options import PrepareOptions

    loaded = _loaded(
        tmp_path,
        "version: 1.1\nkind: operation\nname: needs-build\n"
        "build: {hubRef: kaniko, params: {destination: {value: {name: 'built:1'}}}}\n"
        "component: {run: {kind: job, container: {image: x:1, command: [/bin/true]}}}\n",
    )
    monkeypatch.setenv("POLYAXON_PREFECT_CONTAINER_CLI", "true")  # any program: not run here
    find_cli.cache_clear()
    try:
        docker = executor_for("job", "docker")
        job = docker.prepare(loaded)  # type: ignore[arg-type]
        assert job.image_run is not None
        assert (job.image, job.image_run.pull) == ("built:1", "never")
        build_job = job.image_run.build_job
        assert build_job is not None and build_job.image_run is not None
        assert build_job.image_run.build_tag == "built:1"
        assert build_job.context.uuid != job.context.uuid  # a run of its own
        assert not any(note.startswith("build skipped") for note in job.notes)
        options = PrepareOptions(skip_builds=True)
        skipped = docker.prepare(loaded, options)  # type: ignore[arg-type]
        assert skipped.image_run is not None
        assert (skipped.image, skipped.image_run.build_job) == ("x:1", None)
    finally:
        find_cli.cache_clear()


def test_the_stand_in_polyaxon_packages_stay_out_of_an_image() -> None:
    """The local check of "can this Python import polyaxon" was of this machine's Python: in an
    image the stand-ins would come before its site-packages and shadow a real polyaxon."""
    import os

    from polyaxon_prefect.runtime.docker._container import _without_compat_path
    from polyaxon_prefect.runtime.render._compat_path import COMPAT_DIR

    v1, v0 = str(COMPAT_DIR / "v1"), str(COMPAT_DIR / "v0")
    assert "PYTHONPATH" not in _without_compat_path({"PYTHONPATH": os.pathsep.join([v1, v0])})
    mine = {"PYTHONPATH": os.pathsep.join(["/src/lib", v1])}
    assert _without_compat_path(mine)["PYTHONPATH"] == "/src/lib"


def test_a_replicas_container_section_gives_its_cpus_memory_and_gpus() -> None:
    """Each replica's container is held to its own section's resources, as its pod would be:
    limits first, else requests."""
    from polyaxon_prefect.runtime.docker._container import container_resources
    from polyaxon_prefect.specs import KFReplica

    replica = KFReplica.model_validate(
        {
            "replicas": 2,
            "container": {
                "image": "busybox",
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"memory": "256Mi", "nvidia.com/gpu": 1},
                },
            },
        }
    )
    assert container_resources(replica.container) == ("0.5", 256 * 2**20, 1)
    assert container_resources(None) == (None, None, 0)


def test_mpi_key_folders_of_a_killed_run_are_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MPI run's key pair (a secret) outlives a kill -9 of its CLI only until the session's
    reaper (by session) or the next CLI (by dead process) runs; a live run's stays."""
    import subprocess
    import sys
    import tempfile

    from polyaxon_prefect.runtime.docker._container_cli import _reap_key_folders

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"plx-mpi-ssh-{'a' * 32}-{gone.pid}-x1"
    live = tmp_path / f"plx-mpi-ssh-{'b' * 32}-{os.getpid()}-x2"
    other = tmp_path / "plx-mpi-ssh-unrelated"
    for folder in (dead, live, other):
        folder.mkdir()
    _reap_key_folders(None)
    assert not dead.exists() and live.exists() and other.exists()
    _reap_key_folders("b" * 32)
    assert not live.exists() and other.exists()
