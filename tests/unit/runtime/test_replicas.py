"""The replicas executor without Prefect: what is refused before anything starts, and stops."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from polyaxon_prefect.distributed import NotEnoughGpusError
from polyaxon_prefect.exceptions import PolyaxonfileError, UnsupportedFeatureError
from polyaxon_prefect.loading import load_polyaxonfile
from polyaxon_prefect.runtime import PrepareOptions, executor_for, new_run_context
from polyaxon_prefect.runtime._mpi import mpirun_argv
from polyaxon_prefect.runtime.gpu._gpu_admit import admitted


def _load(tmp_path: Path, run: str):
    path = tmp_path / "polyaxonfile.yaml"
    path.write_text(
        "version: 1.1\nkind: component\nname: dist\nrun:\n" + textwrap.indent(run, "  "),
        encoding="utf-8",
    )
    return load_polyaxonfile(path)


def _prepare(tmp_path: Path, run: str, **kwargs):
    loaded = _load(tmp_path, textwrap.dedent(run))
    kind = loaded.operation.component.run.kind
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    options = PrepareOptions(run_context=context, connections={}, **kwargs)
    return executor_for(kind).prepare(loaded, options)


def test_more_gpus_than_the_machine_has_is_refused_at_prepare(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(NotEnoughGpusError, match="ask for 2 GPU"):
        _prepare(
            tmp_path,
            """\
            kind: pytorchjob
            master: {container: {command: [echo], resources: {limits: {nvidia.com/gpu: 1}}}}
            worker: {container: {command: [echo], resources: {limits: {nvidia.com/gpu: 1}}}}
            """,
        )


def test_gpus_are_sliced_per_replica_when_the_op_runs(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    prepared = _prepare(
        tmp_path,
        """\
        kind: pytorchjob
        master: {container: {command: [echo], resources: {limits: {nvidia.com/gpu: 1}}}}
        worker: {replicas: 2, container: {command: [echo]}}
        """,
    )
    assert prepared.gpu_requests == (1, 0, 0)
    monkeypatch.setenv("POLYAXON_PREFECT_GPU_LOCKS", str(tmp_path / "locks"))
    with admitted(prepared, None, None) as running:
        assert running is not None
        gpus = [(r.name, r.gpus) for r in running.replicas]  # type: ignore[attr-defined]
    assert gpus == [
        ("master-0", "3"),
        ("worker-0", ""),
        ("worker-1", ""),
    ]


def test_a_template_error_is_located_at_its_replica(tmp_path: Path):
    # a key `globals` lacks is found when the replicas are prepared (an undefined name is
    # found earlier, when the file is loaded)
    with pytest.raises(PolyaxonfileError) as info:
        _prepare(
            tmp_path,
            """\
            kind: tfjob
            worker: {replicas: 2, container: {command: [echo, "{{ globals.nope }}"]}}
            """,
        )
    [problem] = info.value.problems
    assert problem.path[:4] == ("component", "run", "worker", "container")
    assert problem.line == 6


def test_prepare_job_refuses_a_kind_with_replicas(tmp_path: Path):
    from polyaxon_prefect.runtime import prepare_job

    loaded = _load(tmp_path, "kind: tfjob\nworker: {container: {command: [echo]}}\n")
    with pytest.raises(UnsupportedFeatureError, match="cannot run as one process"):
        prepare_job(loaded, connections={})


def test_mpi_without_mpirun_names_the_debian_package(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UnsupportedFeatureError) as info:
        _prepare(
            tmp_path,
            f"""\
            kind: mpijob
            launcher: {{container: {{command: [mpirun, -np, "2", {sys.executable}, x.py]}}}}
            worker: {{replicas: 2, container: {{image: a}}}}
            """,
        )
    [problem] = info.value.problems
    assert problem.rule == "mpirun_missing" and "openmpi-bin" in (problem.hint or "")


def test_mpirun_gets_the_hostfile(tmp_path: Path):
    hostfile = tmp_path / "hostfile"
    assert mpirun_argv(["mpirun", "-np", "2", "a"], hostfile, 4) == [
        "mpirun", "--hostfile", str(hostfile), "-np", "2", "a",
    ]  # fmt: skip
    assert mpirun_argv(["python", "a.py"], hostfile, 4) == [
        "mpirun", "--hostfile", str(hostfile), "-np", "4", "python", "a.py",
    ]  # fmt: skip


def test_in_containers_an_mpijob_runs_every_replica_and_only_the_launcher_gets_mpirun(
    tmp_path: Path, monkeypatch
):
    """No ``mpirun`` needed here (it is the image's), the workers are replicas of their own,
    and the hostfile names their hosts on the run's network."""
    from polyaxon_prefect.distributed import named_cluster
    from polyaxon_prefect.runtime._replicas import _launch, prepare_replicas

    monkeypatch.setenv("PATH", str(tmp_path))  # no mpirun on this PATH
    loaded = _load(
        tmp_path,
        textwrap.dedent(
            """\
            kind: mpijob
            slotsPerWorker: 2
            launcher: {container: {image: a, command: [mpirun, python3, x.py]}}
            worker: {replicas: 2, container: {image: a, command: [/usr/sbin/sshd, -De]}}
            """
        ),
    )
    context = new_run_context("t", "proj", artifacts_root=tmp_path / "artifacts").make_dirs()
    options = PrepareOptions(run_context=context, connections={})
    prepared = prepare_replicas(loaded, options, every_replica=True)
    assert [one.name for one in prepared.replicas] == ["launcher-0", "worker-0", "worker-1"]
    assert prepared.plan is not None
    hosts = {r.name: f"run-{r.name}" for r in prepared.plan.replicas}
    launch = _launch(prepared, prepared.plan, named_cluster(prepared.plan, hosts, "j"))
    hostfile = context.run_path / "replicas" / "hostfile"
    assert launch["launcher-0"][0] == ["mpirun", "--hostfile", str(hostfile), "python3", "x.py"]
    assert launch["worker-1"][0] == ["/usr/sbin/sshd", "-De"]
    assert hostfile.read_text() == "run-worker-0 slots=2\nrun-worker-1 slots=2\n"
