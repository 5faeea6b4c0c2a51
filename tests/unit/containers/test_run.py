"""The ``run`` command line of an op's container: every field is one flag, params stay one
argument, and no value of the op's environment is on the command line."""

from __future__ import annotations

import pytest

from polyaxon_prefect.containers import (
    LABEL_SESSION,
    ContainerRun,
    Mount,
    container_name,
    env_names,
    gpu_count,
    gpu_flags,
    parse_cpus,
    parse_memory,
    pull_flag,
    run_argv,
)
from polyaxon_prefect.specs import backend_for


def test_run_argv_maps_each_field_to_its_flag_and_keeps_a_param_one_argument() -> None:
    param = "x; rm -rf / $(id)"
    argv = run_argv(
        "podman",
        ContainerRun(
            name="plx-abc-1",
            image="localhost/img:1",
            argv=["python", "train.py", param],
            env=["POLYAXON_RUN_UUID", "TOKEN"],
            workdir="/srv/project",
            mounts=[Mount("/data/artifacts"), Mount("/src", "/opt/src", read_only=True)],
            labels={LABEL_SESSION: "s1"},
            pull="never",
            cpus="0.5",
            memory=512 * 2**20,
            gpus=2,
        ),
    )
    assert argv == [
        *("podman", "run", "--rm", "--name", "plx-abc-1", "--pull=never"),
        *("--label", f"{LABEL_SESSION}=s1"),
        *("--volume", "/data/artifacts:/data/artifacts", "--volume", "/src:/opt/src:ro"),
        *("--env", "POLYAXON_RUN_UUID", "--env", "TOKEN"),
        *("--workdir", "/srv/project", "--cpus", "0.5", "--memory", str(512 * 2**20)),
        *("--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"),
        *("localhost/img:1", "python", "train.py", param),
    ]


def test_env_names_are_the_variables_the_op_sets_not_the_inherited_ones() -> None:
    inherited = {"PATH": "/usr/bin", "HOME": "/root", "LR": "0.1"}
    env = {**inherited, "LR": "0.2", "POLYAXON_RUN_UUID": "u1"}
    assert env_names(env, inherited) == ["LR", "POLYAXON_RUN_UUID"]


@pytest.mark.parametrize(
    ("policy", "flag"),
    [("Always", "always"), ("IfNotPresent", "missing"), ("Never", "never"), (None, "missing")],
)
def test_pull_flag_of_each_image_pull_policy(policy: str | None, flag: str) -> None:
    assert pull_flag(policy) == flag


@pytest.mark.parametrize(
    ("quantity", "cpus"), [("500m", "0.5"), (2, "2"), ("1.5", "1.5"), ("x", None), (None, None)]
)
def test_cpu_quantities(quantity: object, cpus: str | None) -> None:
    assert parse_cpus(quantity) == cpus


@pytest.mark.parametrize(
    ("quantity", "size"),
    [("512Mi", 512 * 2**20), ("1G", 10**9), ("2Gi", 2 * 2**30), (1000, 1000), ("lots", None)],
)
def test_memory_quantities(quantity: object, size: int | None) -> None:
    assert parse_memory(quantity) == size


def test_gpus_are_docker_gpus_or_podman_cdi_devices_sliced_as_given() -> None:
    assert gpu_count({"nvidia.com/gpu": "2"}) == 2
    assert gpu_count({"cpu": 1}) == 0
    assert gpu_flags("docker", 2, ["3", "5"]) == ["--gpus", '"device=3,5"']
    assert gpu_flags("podman", 1, ["3", "5"]) == ["--device", "nvidia.com/gpu=3"]
    assert gpu_flags("podman", 0) == []


def test_container_names_are_valid_and_unique_per_attempt() -> None:
    assert container_name("0123456789abcdef", "a1") == "plx-0123456789ab-a1"
    assert container_name("r/u n", "x") == "plx-r-u-n-x"


def test_on_the_docker_backend_every_op_of_a_pipeline_runs_in_its_image() -> None:
    assert backend_for("job", "docker", in_pipeline=True) == "docker"
    assert backend_for("notifier", "docker", in_pipeline=True) == "docker"
    # on a cluster backend a job op is its own pod; a notifier stays with the pipeline
    assert backend_for("job", "kubeflow", in_pipeline=True) == "kubeflow"
    assert backend_for("notifier", "kubeflow", in_pipeline=True) == "local"


def test_a_job_container_gets_the_gpus_the_pool_gave_its_op_not_the_first_ones() -> None:
    """Two containers of one machine each holding one GPU of the pool must not both get GPU 0."""
    run = ContainerRun(name="plx-a", image="img", argv=["true"], gpus=1, gpu_devices=("1",))
    assert "nvidia.com/gpu=1" in run_argv("podman", run)
    assert run_argv("docker", run)[-4:-2] == ["--gpus", '"device=1"']


def test_a_service_publishes_its_ports_on_loopback_and_podman_is_told_not_to_wait() -> None:
    from polyaxon_prefect.containers import remove_argv

    argv = run_argv(
        "podman",
        ContainerRun(name="s", image="img", argv=["serve"], publish=((41000, 6006), (41001, 8888))),
    )
    assert argv[argv.index("img") - 4 : argv.index("img")] == [
        *("--publish", "127.0.0.1:41000:6006", "--publish", "127.0.0.1:41001:8888"),
    ]
    assert remove_argv("podman", ["a", "b"]) == ["podman", "rm", "-f", "--time", "2", "a", "b"]
    assert remove_argv("docker", ["a"]) == ["docker", "rm", "-f", "a"]
